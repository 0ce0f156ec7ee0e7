// Package libuserns creates, pins and describes user namespaces, and edits
// a spec to use one.
//
// Guarantees:
//   - NewUserns returns an fd for a fresh user namespace with exactly the
//     requested uid and gid mappings (setgroups left enabled: the pod's
//     root may call setgroups inside its own range). The helper process
//     that owns the namespace while its maps are written is a
//     clone(CLONE_VM|CLONE_NEWUSER) child on a stack of its own that shares
//     our address space (no page table copied, nothing made copy-on-write,
//     no execve) and runs nothing but raw system calls: it waits for EOF on
//     a pipe whose write end we close when done, or the kernel closes when
//     we die. NewUserns closes that end before it returns, but does not
//     wait: the child, which holds nothing of ours by then, is reaped once
//     it has exited by the next NewUserns or ReapHolders (WaitHolders
//     waits for it), or by init after we exit. This needs cgo
//     (holder_linux.c).
//   - NewPodNamespaces is NewUserns, and, when asked, an IPC and a UTS
//     namespace made by the same clone (CLONE_NEWIPC|CLONE_NEWUTS beside
//     CLONE_NEWUSER), which the kernel has the new user namespace own.
//   - Pin makes a namespace outlive every process in it by bind-mounting its
//     nsfs inode on a file (as `ip netns` does). A pinned path names that
//     namespace and no other for as long as the mount exists: unlike
//     /proc/<pid>/ns/user it cannot be recycled with a PID. Unpin detaches
//     the mount and unlinks the file, which also drops copies that mount
//     propagation made in other mount namespaces.
//   - Modifier edits nothing but linux.namespaces[user], linux.uidMappings
//     and linux.gidMappings.
//   - OpenNS opens a caller's namespace path only once fstatfs says nsfs,
//     and checks its type; OpenPinnedType checks a pin's.
//   - IsUserns tells a user namespace from any other path without opening
//     a file it has not first seen to be an nsfs file (a caller's
//     linux.namespaces[user].path); OpenUserns does the same and returns
//     the namespace it checked, open.
//   - Mappings reads the uid and gid maps of an open user namespace,
//     never through a path: a clone(CLONE_VM) child like NewUserns's
//     holder setns(2)s into it and waits while its /proc/<pid>/uid_map
//     and gid_map are read (Go cannot setns into a user namespace: it is
//     multi-threaded), after its ns/user was checked to be that
//     namespace. The child is reaped as the holders are. Maps that are
//     empty or more than 340 lines long are refused (ParseNamespaceMaps).
//   - LockedFlags and LockedFlagsModifier add to a bind mount that runc will
//     remount the nosuid, nodev and noexec its source already has, which a
//     user namespace locks: nothing the container can observe changes.
//   - GuardStdio replaces each of fds 0-2 that is a host device node (not a
//     pty) by a private node of the same device, so a runtime that fchowns
//     stdio to the container's root (crun) cannot change the host's
//     /dev/null. The nodes live on a detached tmpfs (fsopen + fsmount,
//     Linux >= 5.2) that nothing on the host can reach.
//
// Kernel requirements: user namespaces (CONFIG_USER_NS) and nsfs
// (Linux >= 3.19); NS_GET_NSTYPE (Linux >= 4.11) to check pinned files.
package libuserns
