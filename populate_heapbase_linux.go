//go:build cgo && !goexperiment.randomizedheapbase64

package main

// The Go heap grows from the start of its first chunk (the Makefile builds
// with GOEXPERIMENT=norandomizedheapbase64): the mmap wrapper maps in the
// head of each heap chunk only (populate_linux.c).

// #cgo CFLAGS: -DPOPULATE_HEAP_HEAD
import "C"
