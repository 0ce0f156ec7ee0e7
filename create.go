package main

// create runs the create/run pipeline (package create): load config.json →
// request → plan (the only step that touches the outside world) →
// modifiers → validate → atomic write → run runc. What the plan took is
// given back if runc fails.
func (a *app) create() int {
	return a.Call.Create()
}

// createUnscanned handles a create or run whose argv holds a flag the
// scanner does not know (create.Call.CreateUnscanned).
func (a *app) createUnscanned() int {
	return a.Call.CreateUnscanned()
}
