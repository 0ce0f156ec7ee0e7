package nsjoin

import "path/filepath"

// PIDNSPin is where Resolve pins the target's PID namespace.
func PIDNSPin(pinDir string) string { return filepath.Join(pinDir, "pidns") }

// UsernsPin is where Resolve pins the target's user namespace when no
// Lookup.UsernsPins path names it.
func UsernsPin(pinDir string) string { return filepath.Join(pinDir, "userns") }
