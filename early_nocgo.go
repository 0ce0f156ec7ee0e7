//go:build !cgo

package main

// startedRunc: without cgo there is no constructor, and nothing started.
func startedRunc() *earlyRunc { return nil }

// startedGated: nor a gated create.
func startedGated() *gatedRunc { return nil }
