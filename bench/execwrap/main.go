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
