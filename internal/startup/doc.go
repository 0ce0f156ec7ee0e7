// Package startup sets up the Go runtime for what this binary is: a
// process that lives for tens of milliseconds, on a node that runs many of
// them at once. Importing it (for its init) is all it takes; it imports
// nothing but runtime and syscall.
//
// Its init runs Go code on one P (GOMAXPROCS 1) unless the environment
// sets GOMAXPROCS. The wrapper has no parallel work: it runs system calls
// one after the other and waits for runc, and a blocking system call still
// hands the P on, so goroutines keep running beside it. With a second P
// the runtime keeps an idle thread spinning for work, starts more threads,
// and takes CPU from the runc it waits for. The price: with one P, sysmon
// retakes the P from any system call that outlasts its 20 us tick and
// stays at that tick while the Go code makes system calls. Measured both
// ways, one P was 2.2 ms faster a lifecycle in one run (N=150) and no
// different in two later ones (N=100, N=200).
//
// The runtime's memory is mapped in when it is mapped, not here: the
// binary's link wraps mmap (populate_linux.c in package main). This
// package's init once mapped in a window of the heap itself, but by then
// the runtime's own start-up had faulted in ~100 heap pages, and go1.26's
// random heap base put the rest in the next chunk about a third of the
// time (bench/README, thirteenth round).
//
// bench/README.md (seventh round) has the measurements.
package startup
