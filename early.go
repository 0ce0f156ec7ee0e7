package main

// earlyRunc is runc's delete, started by the constructor before the Go
// runtime so that the two overlap (fastpath_linux.c): the wrapper waits for
// it wherever it would run or exec runc, and reads the stamp from the
// container's runc state.json as it was before that runc ran.
type earlyRunc struct {
	pid   int
	state []byte // <root>/<id>/state.json
}
