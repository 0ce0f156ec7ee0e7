//go:build !cgo

package main

// startedRunc: without cgo there is no constructor, and nothing started.
func startedRunc() *earlyRunc { return nil }
