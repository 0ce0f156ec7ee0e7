// Package state owns the wrapper's state directory (config stateDir,
// /run/runc-userns by default): the names of its files (Layout), the
// in-flight markers that keep a create's claims from being reclaimed, and
// the staging mounts and pins a create leaves that a delete, a reclaim or
// `pool gc` removes. It is plumbing for internal/create and
// internal/admin, not a domain package: it imports the pool, idmap,
// libuserns and nsjoin packages and internal/oci and internal/procfs.
//
// # On-disk layout
//
//	<stateDir>/pool.lock, pool.d/, pool.roots  the pool (package pool)
//	<stateDir>/pods.lock                       flock'd around a range's change and its pins
//	                                           where no sandbox makes them (LockPods)
//	<stateDir>/pods/<owner>/userns             the pod's pinned user namespace
//	<stateDir>/pods/<owner>/ipc, uts           the pod's pinned IPC and UTS namespaces, owned
//	                                           by its user namespace, for a pod whose spec
//	                                           joins them by path (CRI-O's pinns)
//	<stateDir>/pods/<owner>/mapping            "<hostID> <size>" of that namespace
//	<stateDir>/pods/<owner>/cgroup             the cgroup parent of the pod's sandbox (or first container)
//	                                           (oci.PodCgroup), which its other
//	                                           containers must share
//	<stateDir>/containers/<root>/<id>/rootfs   a container's idmapped rootfs,
//	                                           mounted only while runc creates it
//	<stateDir>/containers/<root>/<id>/mounts/N its idmapped bind mount N (runc 1.1)
//	<stateDir>/containers/<root>/<id>/layers/N idmapped lower layer N of an overlay rootfs
//	<stateDir>/containers/<root>/<id>/layers/upper
//	                                           idmapped directory of its upper and work dirs
//	<stateDir>/containers/<root>/<id>/netns    "<dev> <ino> <path>" of the network namespace
//	                                           runc < 1.3 starts in (package netns, Record)
//	<stateDir>/inflight/<root>-<id>            container <id>'s in-flight marker (below)
//	<stateDir>/features-<hash>.json            the real runtime's `features`
//	<stateDir>/features-<hash>.sum             what a create needs of it, a field a line
//	                                           (package internal/runc)
//	<stateDir>/stamp.key                       the key that signs stamps (internal/oci)
//
// <root> is RootHash of runc's --root, the first 6 bytes of the SHA-256 of
// its clean path in hex: container IDs are unique per root only
// (containerd runs one root per namespace). A container directory is made
// a mount of its own (idmap.StageDir) before anything is staged below it,
// so that DetachStaged takes everything below it with one umount; the
// directories themselves stay until the container's delete, because runc
// starts `runc exec`'s setns process with root.path as its working
// directory. A container directory is reachable only by host root and
// the container's root (MkdirPrivate: root:<the pod root's host gid>,
// 0710), from before anything is staged in it: a pod's staged rootfs and
// volumes are no one else's to read, even while a create runs or after it
// was killed. The directories above it are made mode 0711 up to stateDir
// by MkdirTraversable, which refuses a stateDir that "other" cannot
// search: runc mounts the staged rootfs from inside the pod's user
// namespace, where host permissions for "group" and "other" apply.
//
// # In-flight markers
//
// In-flight markers close the race between a create that has taken a
// range and not yet handed the container to runc, and a reclaim (pool gc,
// or an allocation finding the pool full) that would see no container and
// take the range back. See pool/doc.go, "Reclaiming and rebuilding".
//
//	<stateDir>/inflight/<root hash>-<id>   flock(LOCK_EX)ed by the create of
//	                                       container <id> of runc root <root>
//	                                       from before it changes anything
//	                                       until runc's init runs the
//	                                       container process, and by a delete
//	                                       while it releases what the
//	                                       container held; holds the claim
//	                                       (InflightRecord, JSON) once
//	                                       allocated, empty before
//
// The create holds the lock on a read-only descriptor that it makes
// inheritable just before it starts runc (InheritMarker), so that runc and
// runc's init inherit it, and nothing the create runs before (getsubids,
// `runc features`) does: the marker stays locked while runc create runs
// even if the wrapper is killed, until runc init execs the container
// process (runc marks every fd past --preserve-fds close-on-exec there),
// by which time runc's state.json exists. A reclaim counts a member alive
// while its marker is locked (LOCK_EX|LOCK_NB fails) or runc has it with
// a live init, and checks the marker first: a create that finishes
// between the two checks has written state.json by then.
//
// The lock is exclusive, and waited for only briefly (500 ms for a
// create, 2 s for a delete): it is what makes a create of a container that
// runc has, or that another create is making or a delete releasing, leave
// everything as it is (AcquireInflight fails, with ErrRuncHas when runc
// has it). Such a create used to go on, fail, and undo on the way out what
// the other one had taken (its range, pin, staging mounts and records: all
// named after the container's ID).
//
// # Guarantees
//
//   - A marker is unlinked only while its lock is held (RemoveInflight
//     after AcquireInflight, HoldForRelease or LockIdleMarker;
//     SweepInflight), and a lock counts only while the marker's path
//     still names the locked file (StillNamed): a create that opened a
//     marker just before it was unlinked opens a new one.
//   - Any doubt counts as busy or alive (InflightBusy, ProcessAlive,
//     RuncHas): the answers decide whether a range may be given to
//     another pod.
//   - SweepInflight removes only markers nobody holds whose container
//     runc does not have, and only once what their create left (a
//     container:<ID> target's pins, staging mounts) is detached.
//   - A delete that finds no state.json while a create of the ID still
//     holds the marker (its wrapper was killed, its runc goes on alone)
//     waits for that create to end (AwaitCreate), then deletes and
//     releases what it made: the caller (containerd's shim) deletes
//     once, at once, and never again.
//   - Release is idempotent: RemoveStaged, UnpinPod and RemoveInflight of
//     what is gone succeed. Nothing is removed with os.RemoveAll: a
//     staging entry could still be a mount of the container's image or of
//     a volume.
//   - Nothing is fsynced: the state lives on tmpfs (/run) and means
//     nothing after a reboot, when every mount and pin is gone too.
//
// # Kernel requirements
//
// flock(2) on the state directory's filesystem (tmpfs, or any local
// filesystem; not NFS, where flock may be emulated with POSIX locks that
// do not follow an inherited descriptor). /proc mounted: /proc/self/fd
// (the marker's descriptor is placed above every open one),
// /proc/<pid>/stat (ProcessAlive). umount2(MNT_DETACH) and the mount API
// that package idmap needs for staging; nsfs bind mounts for the pins
// (package libuserns).
package state
