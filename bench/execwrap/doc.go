// Command execwrap is the smallest Go runc wrapper: it execs the real runc
// with argv untouched and does nothing else. make bench runs it beside
// runc-userns as the reference: what any Go wrapper pays for its own
// process start-up before doing anything.
//
// The runtime is set at build time: -ldflags "-X main.runtime=/usr/sbin/runc"
// (/usr/sbin/runc when not set). The environment, stdio and every inherited
// file descriptor go to runc with the exec. If the exec fails it prints
// "execwrap: <error>" and exits 1. It reads and writes no file and needs
// nothing of the kernel but execve(2).
package main
