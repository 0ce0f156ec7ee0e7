// Package idmap makes idmapped mounts on the host: a clone of a directory
// tree whose inode owners are seen through a user namespace's mappings
// (MOUNT_ATTR_IDMAP), so that a host file owned by 0:0 looks owned by 0:0
// to the pod's root, whose host uid is an unprivileged ID from the pool,
// and a file that root creates lands on the disk as 0:0. Nothing is
// chowned and the cost does not depend on the size of the tree.
//
// Guarantees:
//   - Mount never leaves a half-made mount behind: the clone is detached
//     (not attached anywhere) until mount_setattr succeeded, and closing
//     the open_tree fd of a detached clone frees it.
//   - A staged clone is private, or a slave of its source (as the mount's
//     propagation option asks: Candidate.Propagation), never a peer; and
//     the staging directory it is attached below (StageDir) is made
//     private before anything is attached, so on a host whose mounts are
//     shared nothing staged propagates into other mount namespaces, and
//     detaching it later cannot propagate an unmount into a running
//     container or onto the host.
//   - Detach is idempotent (a path that is gone or not a mount is fine);
//     DetachAll also says whether anything was mounted there, and when it
//     was, what was mounted below the path went with it.
//
// Kernel requirements: open_tree, move_mount (Linux >= 5.2), mount_setattr
// with MOUNT_ATTR_IDMAP (Linux >= 5.12), and a source filesystem that
// supports idmapped mounts (ext4, xfs, btrfs, tmpfs >= 6.3, overlayfs as a
// lower layer source, ...). An overlay rootfs is rebuilt on idmapped
// lower and upper layers, which overlayfs takes from Linux 5.19 (before,
// it refuses idmapped layers: EINVAL), and needs the original mounted
// with index=off. An overlay rootfs is looked up with statx's
// unique mount ID and statmount(2) where the kernel has them with mount
// options (Linux >= 6.10), else in /proc/self/mountinfo.
package idmap
