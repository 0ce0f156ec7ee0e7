// Package libuserns creates, pins and describes user namespaces, and edits
// a spec to use one.
//
// Guarantees:
//   - NewUserns returns an fd for a fresh user namespace with exactly the
//     requested uid and gid mappings (setgroups left enabled: the pod's
//     root may call setgroups inside its own range). The helper process it
//     spawns to own the namespace is killed and reaped before it returns;
//     it never runs any code (it stops at execve under PTRACE_TRACEME), the
//     trick runc >= 1.2 uses in libcontainer/internal/userns.
//   - Pin makes a namespace outlive every process in it by bind-mounting its
//     nsfs inode on a file (as `ip netns` does). A pinned path names that
//     namespace and no other for as long as the mount exists: unlike
//     /proc/<pid>/ns/user it cannot be recycled with a PID. Unpin detaches
//     the mount and unlinks the file, which also drops copies that mount
//     propagation made in other mount namespaces.
//   - Modifier edits nothing but linux.namespaces[user], linux.uidMappings
//     and linux.gidMappings.
//
// Kernel requirements: user namespaces (CONFIG_USER_NS) and nsfs
// (Linux >= 3.19); NS_GET_NSTYPE (Linux >= 4.11) to check pinned files.
package libuserns
