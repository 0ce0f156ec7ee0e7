// Package libuserns creates, pins and describes user namespaces, and edits
// a spec to use one.
//
// Guarantees:
//   - NewUserns returns an fd for a fresh user namespace with exactly the
//     requested uid and gid mappings (setgroups left enabled: the pod's
//     root may call setgroups inside its own range). The helper process
//     that owns the namespace while its maps are written is a bare fork
//     (clone with CLONE_NEWUSER, no execve) that runs nothing but raw system
//     calls and waits in ppoll, as containerd's ForkUserns does; it is
//     SIGKILLed before NewUserns returns (and by the kernel if we die first:
//     PR_SET_PDEATHSIG) and reaped in the background. This is cheaper than
//     runc's fork+exec of /proc/self/exe stopped under PTRACE_TRACEME, and
//     works under strace.
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
