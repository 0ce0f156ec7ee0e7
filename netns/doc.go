// Package netns handles a container that joins a network namespace its
// user namespace does not own: a pod user namespace (package libuserns)
// joining the pod's network namespace made by the host (containerd's CNI
// netns, owned by the initial user namespace). Foreign tells such a spec
// apart; three things then fail under runc, and this package does them
// instead or edits them out:
//
//   - Joining. runc older than 1.3 joins the namespaces given by path with
//     the user namespace first, then lacks CAP_SYS_ADMIN over the network
//     namespace and fails with "failed to setns into net namespace:
//     operation not permitted". The wrapper enters the network namespace
//     itself (Enter), on a locked thread, and starts or execs runc from
//     that thread: runc and the container inherit it, and InheritModifier
//     takes the entry out of the spec. A Record keeps the namespace for
//     the container's `runc exec` (which joins only the namespaces the
//     container's config lists), so that exec runs there or not at all,
//     never in the host's network namespace.
//   - Network sysctls. runc writes linux.sysctl from inside the
//     container's user namespace, whose root has no CAP_NET_ADMIN over
//     this network namespace: EPERM on every runc version. PlanSysctls
//     checks the net.* keys, adds the PodDefaults the spec does not set
//     (for a pod's sandbox: unprivileged ports and ping, which a pod
//     whose user namespace owned the namespace would have), and
//     translates net.ipv4.ping_group_range's
//     group IDs through the pod's mapping (the kernel reads them in the
//     writer's user namespace); Sysctls.Write writes them from the host
//     into that namespace just before runc starts, as runc does for a pod
//     without a user namespace; SysctlModifier takes them out of the spec.
//   - sysfs. Mounting sysfs needs CAP_SYS_ADMIN over the network
//     namespace's owning user namespace; SysfsModifier makes each sysfs
//     mount a read-only recursive bind of the host's /sys instead, rprivate
//     (a shared one, under containerd's rootfsPropagation rshared, would
//     carry runc's /sys/fs/cgroup tmpfs back onto the /sys runc binds the
//     cgroup v1 hierarchies from).
//
// The package reads no runc state and no stamp: the caller (internal/create)
// finds the record's file, decides from runc's state whether a container
// has one, and says which user namespace owns what (Foreign's owned).
//
// # Guarantees
//
//   - Enter changes only the calling thread, which stays locked to its
//     goroutine until the returned restore moves it back (a thread that
//     cannot be moved back stays locked, and Go discards it when the
//     goroutine exits).
//   - An ID names a namespace by the nsfs device and inode, so a path that
//     now names another namespace is refused (ErrChanged), not entered.
//     Open neither waits (a FIFO) nor takes a terminal, and opens only an
//     nsfs file of a network namespace: a spec's path names anything its
//     writer chose.
//   - A sysctl is written only to a file beneath /proc/sys/net of the
//     recorded namespace: a key must be a plain relative path there (no
//     empty, "." or ".." component, no NUL), and the file is opened with
//     openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
//     | RESOLVE_NO_XDEV. Two keys naming one file are refused. A
//     ping_group_range is narrowed to the groups the pod's mapping covers
//     ("1 0", no group, when none).
//   - The modifiers edit nothing but what they name: InheritModifier the
//     network entry of linux.namespaces, SysctlModifier the net.* keys of
//     linux.sysctl (nil when none is left), SysfsModifier the sysfs
//     mounts.
//
// # On-disk format
//
// A Record is one line, written by WriteRecord through the caller's atomic
// writer with mode 0600 and read by ReadRecord:
//
//	<dev> <ino> <path>\n
//
// dev and ino are the namespace's nsfs identity in decimal, path the
// absolute path the spec named it by: the rest of the line, spaces and
// all (a path with a newline is refused). Any other line is an error, and
// a missing file is "no record". Package internal/create keeps it at
// state.Layout.NetjoinRecord; it means nothing after a reboot.
//
// # Kernel requirements
//
// nsfs and NS_GET_NSTYPE (Linux >= 4.11) for Open; for Enter, setns(2)
// with CLONE_NEWNET, which needs CAP_SYS_ADMIN in the caller's and in the
// namespace's owning user namespace (the wrapper runs as host root), and
// /proc mounted (/proc/thread-self, Linux >= 3.17); openat2(2)
// (Linux >= 5.6) for Sysctls.Write.
package netns
