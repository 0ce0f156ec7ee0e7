// Command execwrap is the smallest Go runc wrapper: it execs the real runc
// with argv untouched and does nothing else. make bench runs it beside
// runc-userns as the reference: what any Go wrapper pays for its own
// process start-up before doing anything.
// The runtime is set at build time: -ldflags "-X main.runtime=/usr/sbin/runc".
package main

import (
	"os"
	"syscall"
)

var runtime = "/usr/sbin/runc"

func main() {
	err := syscall.Exec(runtime, append([]string{runtime}, os.Args[1:]...), os.Environ())
	os.Stderr.WriteString("execwrap: " + err.Error() + "\n")
	os.Exit(1)
}
