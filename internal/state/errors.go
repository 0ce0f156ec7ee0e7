package state

import "errors"

// ErrRuncHas: runc has a container of that ID already. Its create is
// runc's to refuse, in its own words; nothing of ours is touched.
var ErrRuncHas = errors.New("runc has a container of this ID")

// ErrMarkerBusy: someone else held the marker for all of the wait.
var ErrMarkerBusy = errors.New("in-flight marker locked")
