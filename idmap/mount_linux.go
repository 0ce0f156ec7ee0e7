package idmap

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// clone returns a detached, idmapped clone of the tree at src, with
// propagation (MS_PRIVATE or MS_SLAVE; never left a peer of a shared
// source: see Candidate.Propagation). src is resolved once, here: what is
// mounted later is what was resolved, even if a symlink on the way is
// swapped meanwhile.
func clone(src string, usernsFd int, rec Recursion, propagation uintptr) (int, error) {
	flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC)
	setFlags := uint(unix.AT_EMPTY_PATH)
	if rec != TopOnly {
		flags |= unix.AT_RECURSIVE
	}
	if rec == Tree {
		setFlags |= unix.AT_RECURSIVE
	}
	tree, err := unix.OpenTree(unix.AT_FDCWD, src, flags)
	if errors.Is(err, unix.ENOENT) {
		return -1, fmt.Errorf("clone mount of %s: %w: %w", src, os.NewSyscallError("open_tree", err), ErrNoSource)
	}
	if err != nil {
		return -1, fmt.Errorf("clone mount of %s: %w", src, os.NewSyscallError("open_tree", err))
	}
	// Only directories and regular files are idmapped. Through an
	// idmapped mount of a host device node, FIFO or socket (owned by host
	// root, so by the pod's root in the mapped view) the pod could chown
	// or chmod the host's node: /dev/null made the pod's.
	var st unix.Stat_t
	if err := unix.Fstat(tree, &st); err != nil {
		unix.Close(tree)
		return -1, fmt.Errorf("stat clone of %s: %w", src, os.NewSyscallError("fstat", err))
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFDIR && t != unix.S_IFREG {
		unix.Close(tree)
		return -1, fmt.Errorf("%s is a %s, not a directory or regular file: idmapping it would let the pod's root own the host's node: %w", src, nodeType(t), ErrUnsupported)
	}
	if rec == TreeTopIdmapped {
		// Propagation for every mount of the clone (a clone of a shared
		// mount is its peer), the idmap below for the top one only.
		p := unix.MountAttr{Propagation: uint64(propagation)}
		if err := unix.MountSetattr(tree, "", setFlags|unix.AT_RECURSIVE, &p); err != nil {
			unix.Close(tree)
			return -1, fmt.Errorf("set the propagation of the clone of %s: %w", src, os.NewSyscallError("mount_setattr", err))
		}
	}
	attr := unix.MountAttr{
		Attr_set:    unix.MOUNT_ATTR_IDMAP,
		Userns_fd:   uint64(usernsFd),
		Propagation: uint64(propagation),
	}
	if err := unix.MountSetattr(tree, "", setFlags, &attr); err != nil {
		unix.Close(tree)
		fstype := FSType(src)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
			return -1, fmt.Errorf("failed to set MOUNT_ATTR_IDMAP on %s (%s): %w (maybe the source filesystem doesn't support idmap mounts on this kernel?): %w", src, fstype, err, ErrUnsupported)
		}
		if errors.Is(err, unix.EPERM) {
			// The kernel idmaps a mount once: the source, or a mount
			// below it (a staging mount of another pod's under /run), is
			// idmapped already, or its filesystem belongs to another
			// user namespace.
			return -1, fmt.Errorf("failed to set MOUNT_ATTR_IDMAP on %s (%s): %w (is it, or a mount below it, idmapped already, or mounted from another user namespace?): %w", src, fstype, err, ErrUnsupported)
		}
		return -1, fmt.Errorf("failed to set MOUNT_ATTR_IDMAP on %s (%s): %w", src, fstype, err)
	}
	return tree, nil
}

// Probe reports whether src can be idmapped, without attaching anything.
func Probe(src string, usernsFd int, rec Recursion) error {
	tree, err := clone(src, usernsFd, rec, unix.MS_PRIVATE)
	if err == nil {
		unix.Close(tree)
	}
	return err
}

// Mount attaches at dst a private idmapped clone of src, seen through the
// user namespace usernsFd; rec says whether the submounts of src are
// cloned, and idmapped, too. dst is created (a directory or an empty file, matching
// what src resolved to) if it does not exist.
func Mount(src, dst string, usernsFd int, rec Recursion) error {
	return MountPropagating(src, dst, usernsFd, rec, unix.MS_PRIVATE)
}

// MountPropagating is Mount with the clone's propagation chosen
// (Candidate.Propagation); dst must be below a StageDir, whose private
// mount keeps the clone's propagation as set.
func MountPropagating(src, dst string, usernsFd int, rec Recursion, propagation uintptr) error {
	tree, err := clone(src, usernsFd, rec, propagation)
	if err != nil {
		return err
	}
	defer unix.Close(tree)
	var st unix.Stat_t
	if err := unix.Fstat(tree, &st); err != nil {
		return fmt.Errorf("stat clone of %s: %w", src, os.NewSyscallError("fstat", err))
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		err = os.Mkdir(dst, 0o755)
	} else {
		var f *os.File
		if f, err = os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o644); err == nil {
			f.Close()
		}
	}
	if err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("staging target for %s: %w", src, err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attach idmapped mount of %s at %s: %w", src, dst, os.NewSyscallError("move_mount", err))
	}
	return nil
}

// StageDir makes the directory dir a mount of its own (a clone of the
// mount it is on, attached onto itself), so that what is staged below it
// is detached with one umount of dir: each umount of a mount waits for an
// RCU grace period (0.1-0.3 ms here, a few ms at times), which each staged
// mount, then each staging directory, paid one by one. It must come
// before anything is mounted below dir: the clone does not take submounts
// along, and would hide them. It is attached as the staged mounts are
// (open_tree clone + move_mount), so it propagates to the peers of dir's
// parent and its umount does too; it is then made private, so that
// nothing attached below it propagates anywhere.
func StageDir(dir string) error {
	tree, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("staging directory %s: %w", dir, os.NewSyscallError("open_tree", err))
	}
	defer unix.Close(tree)
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, dir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("staging directory %s: %w", dir, os.NewSyscallError("move_mount", err))
	}
	// Private before anything is attached below it. Under a shared parent
	// (/run usually is) the attach made it shared, and what is attached
	// below a shared mount becomes shared too: the staged clones would
	// lose the propagation they were given, and their umount would
	// propagate to the copies runc made of them, unmounting the
	// submounts of a container's rslave/rshared volume.
	if err := unix.Mount("", dir, "", unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("staging directory %s: %w", dir, &os.PathError{Op: "make private", Path: dir, Err: err})
	}
	return nil
}

// Detach lazily unmounts whatever is mounted at path (MNT_DETACH: a
// container that already holds it keeps its own copy).
func Detach(path string) error {
	_, err := DetachAll(path)
	return err
}

// DetachAll is Detach, and says whether anything was mounted at path:
// when it was, what was mounted below path went with it.
func DetachAll(path string) (bool, error) {
	detached := false
	for {
		err := unix.Unmount(path, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		switch {
		case err == nil:
			detached = true
			continue // something may be stacked below: repeat until nothing is
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
			return detached, nil
		default:
			return detached, fmt.Errorf("detach staging mount: %w", &os.PathError{Op: "umount", Path: path, Err: err})
		}
	}
}

// FSType names the filesystem of path for error messages ("unknown" when
// it cannot be told).
func FSType(path string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return "unknown filesystem"
	}
	if name, ok := fsNames[int64(st.Type)]; ok {
		return name
	}
	return fmt.Sprintf("filesystem magic %#x", st.Type)
}

var fsNames = map[int64]string{
	unix.EXT4_SUPER_MAGIC:      "ext4",
	unix.XFS_SUPER_MAGIC:       "xfs",
	unix.BTRFS_SUPER_MAGIC:     "btrfs",
	unix.TMPFS_MAGIC:           "tmpfs",
	unix.OVERLAYFS_SUPER_MAGIC: "overlay",
	unix.PROC_SUPER_MAGIC:      "proc",
	unix.SYSFS_MAGIC:           "sysfs",
	unix.NFS_SUPER_MAGIC:       "nfs",
	unix.CGROUP_SUPER_MAGIC:    "cgroup",
	unix.CGROUP2_SUPER_MAGIC:   "cgroup2",
	unix.DEVPTS_SUPER_MAGIC:    "devpts",
	unix.NSFS_MAGIC:            "nsfs",
	unix.SQUASHFS_MAGIC:        "squashfs",
	unix.FUSE_SUPER_MAGIC:      "fuse",
	unix.RAMFS_MAGIC:           "ramfs",
}

func nodeType(t uint32) string {
	switch t {
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFLNK:
		return "symlink"
	}
	return fmt.Sprintf("file of type %#o", t)
}
