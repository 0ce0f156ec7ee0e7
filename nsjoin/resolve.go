package nsjoin

// Options says which reference to resolve, for whom, and where to pin.
type Options struct {
	// Root is the runtime's --root, absolute.
	Root string
	// ID and Pod describe the joining container; Cgroup is the cgroup
	// parent its spec names ("" for none: oci.PodCgroup).
	ID     string
	Pod    Pod
	Cgroup string
	// Target is the ID from the reference (see ParseRef).
	Target string
	// PinDir is a directory of the joining container's where the pins are
	// made (created 0711 if missing); see PIDNSPin and UsernsPin.
	PinDir string
}

// Target is a resolved reference.
type Target struct {
	ID string
	// PID is the target's init: proven to be it, and alive, when its
	// namespaces were opened.
	PID int
	Pod Pod
	// PIDNS is the pin of the target's PID namespace, the path for the
	// spec (see PIDModifier).
	PIDNS string
	// Userns is "" when the target's PID namespace belongs to the caller's
	// own user namespace. Otherwise it names the user namespace that owns
	// it, which the joining container must join too: a path from
	// Lookup.UsernsPins or a pin at UsernsPin(PinDir).
	Userns string
	// UIDMap and GIDMap are the target init's /proc/<pid>/uid_map and
	// gid_map as the caller sees them, when Userns is set.
	UIDMap, GIDMap []byte
}
