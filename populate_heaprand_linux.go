//go:build cgo && goexperiment.randomizedheapbase64

package main

// The Go heap starts at a random page of its first chunk: the mmap wrapper
// maps in each heap chunk whole (populate_linux.c).

// heapFromChunkStart: this binary's heap starts at its first chunk's start.
const heapFromChunkStart = false
