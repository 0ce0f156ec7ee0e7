//go:build cgo && goexperiment.randomizedheapbase64

package main

// heapFromChunkStart: the test binary's heap starts at a random page of its
// first chunk, what the tests expect of the wrapper.
const heapFromChunkStart = false
