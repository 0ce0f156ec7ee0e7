// Package nsjoin resolves "container:<ID>" references to another
// container's PID namespace, in a way that cannot be fooled by PID reuse,
// and plans the spec edits that join it.
//
// A reference names a container of the same runtime --root, in the
// wrapper's pid-namespace annotation or as the spec's pid namespace path
// (the form dockershim used). Plan finds it (Wanted tells the caller
// whether a spec has one), Resolve proves and pins the target, and Plan
// decides the edits: the PID namespace, the user namespace that owns it,
// and sysfs. Resolve reads the target's state through the caller's Lookup
// (for runc, internal/create reads only init_process_pid, init_process_start,
// config.labels, config.namespaces and config.cgroups of
// <root>/<id>/state.json, the fields runc 1.1 to 1.5 all write alike, and
// whether <root>/<id>/exec.fifo exists), then:
//
//  1. opens a pidfd and a /proc/<pid> directory fd for the recorded PID;
//  2. reads the start time (field 22 of stat) through that directory fd
//     and compares it with init_process_start: a PID that now belongs to
//     another process is refused, exactly as runc decides whether a
//     container is still running;
//  3. opens ns/pid and ns/user through the same directory fd (a /proc/<pid>
//     directory fd never reaches another process: once its process is
//     reaped, lookups under it fail);
//  4. checks, after opening, that the pidfd's process is still alive
//     (pidfd_send_signal with signal 0): the process whose start time
//     matched existed until the namespaces were open, so they are its;
//  5. pins the PID namespace by bind-mounting its nsfs inode on
//     <pinDir>/pidns (as `ip netns` does) and hands that path to the
//     runtime. The pin names that namespace and no other for as long as it
//     exists; Release detaches and unlinks it.
//
// Guarantees:
//   - A join never lands in the namespace of a process other than the
//     target's init: the PID is proven to be that init (start time, pidfd)
//     at the moment its namespaces are opened, and the path written to the
//     spec is a pin, not /proc/<pid>/ns/pid.
//   - Refused, each with an error wrapping one sentinel of errors.go and
//     naming the target: a malformed reference (ErrBadRef), a reference to
//     the joining container itself (ErrSelf), a target the runtime does not
//     have (ErrNotFound), one that is not running (created but not started,
//     exited, or its PID reused: ErrNotRunning), one of another pod
//     (ErrOtherPod, see SamePod; or of another cgroup parent while the
//     annotations say one pod), one in the host's PID namespace
//     (ErrHostPID), one whose PID namespace belongs to a user namespace
//     that cannot be described (ErrUserns). Plan also refuses, without a
//     sentinel: an annotation and a spec path that disagree, a joiner whose
//     pod annotations the caller does not trust (Request.PodIdentity), and
//     a joiner that asks for a user namespace other than the target's.
//   - When the user namespace that owns the target's PID namespace is not
//     the caller's, Target.Userns names it: a path the caller designated
//     (Lookup.UsernsPins, e.g. the pod's own pin), checked to be that very
//     namespace by inode, else a pin made at <pinDir>/userns; Target.UIDMap
//     and GIDMap hold the target's raw uid_map and gid_map. A container
//     must join the PID namespace together with the user namespace that
//     owns it, or it cannot mount its /proc: Plan's edits join it (with the
//     mappings when the runtime needs them), unless the pool gives the
//     container that very namespace anyway (Join.TakesUserns is then
//     false). With a network namespace that user namespace does not own,
//     sysfs becomes the caller's read-only bind of /sys, or, for a runtime
//     that joins the user namespace first (runc < 1.3), the join is
//     refused.
//   - The edits (Join.Modifiers) are spec modifiers: no I/O. They record
//     the reference in the pid-namespace annotation, so a second create of
//     the same bundle resolves it afresh; a pin of an earlier create found
//     in the spec (under Request.PinBase) is replaced, never reused.
//   - Nothing stays pinned after an error of Plan or Resolve; Cleanup and
//     Release are idempotent (pins gone or never made are fine).
//   - A joining container cannot outlive the target's init: when the init
//     of a PID namespace exits, the kernel kills every other process in it.
//     So the user namespace (and the ID range) of the target is not given
//     back while a joiner still runs in it.
//   - Pod rules (SamePod): both containers belong to the same pod (as the
//     caller works it out from the containerd or CRI-O sandbox
//     annotations; a sandbox belongs to its own pod), or neither belongs to
//     any pod.
//   - nsjoin imports nothing of the wrapper but internal/procfs: not
//     internal/runc, internal/oci, nor another domain package. What it
//     needs of them (the runtime's state of a container, the ID and pod
//     rules, the annotation keys, libuserns's id-map parser and user
//     namespace modifier, a network namespace's owner, the runtime's
//     features) comes in as a Host, declared here, and plain values
//     (Request); internal/create passes the adapters. It logs only through the
//     logrus.FieldLogger it is given.
//
// On disk: reads nothing of the runtime's directory itself (Lookup does);
// writes <pinDir>/pidns and <pinDir>/userns (mode 0444 files with an nsfs
// bind mount on them), pinDir created 0711 when missing.
//
// Kernel requirements: pidfd_open (Linux >= 5.3), pidfd_send_signal
// (Linux >= 5.1), nsfs bind mounts (Linux >= 3.19), NS_GET_USERNS
// (Linux >= 4.9).
package nsjoin
