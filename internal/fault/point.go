//go:build !faults || !linux

package fault

// Enabled is false: this build has no fault switches.
const Enabled = false

// Point does nothing: the switches are built only with the tag "faults".
// It reads no environment, so that the production binary takes the same
// path whatever a caller sets.
func Point(string) {}
