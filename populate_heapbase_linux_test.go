//go:build cgo && !goexperiment.randomizedheapbase64

package main

// heapFromChunkStart: the test binary's heap starts at its first chunk's
// start (populate_heapbase_linux.go), what the tests expect of the wrapper.
const heapFromChunkStart = true
