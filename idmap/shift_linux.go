package idmap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ShiftOwners is the fallback for a rootfs whose filesystem cannot be
// idmapped, used only when the operator enables it (userns.rootfsChown):
// every entry owned by an ID below size is chowned to hostID+ID, as
// userns-remap and slow_chown do. It costs one chown per file, it writes
// to the image, and it is one-way: the tree stays owned by that range.
// Set-user-ID and set-group-ID bits, which chown clears, are restored.
// Mount points below root are not crossed, bind mounts from the same
// filesystem included (told by mount ID, Linux 5.8; by device before):
// what is mounted there is the host's, not the image's. It returns how
// many entries it changed.
func ShiftOwners(root string, hostID, size uint32) (int, error) {
	rootSt, err := lstatx(root)
	if err != nil {
		return 0, err
	}
	n := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := lstatx(path)
		if err != nil {
			return err
		}
		if st.Dev_major != rootSt.Dev_major || st.Dev_minor != rootSt.Dev_minor ||
			st.Mask&rootSt.Mask&unix.STATX_MNT_ID != 0 && st.Mnt_id != rootSt.Mnt_id {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		uid, gid := st.Uid, st.Gid
		if uid >= size && gid >= size {
			return nil
		}
		if uid < size {
			uid += hostID
		}
		if gid < size {
			gid += hostID
		}
		if err := unix.Lchown(path, int(uid), int(gid)); err != nil {
			return &os.PathError{Op: "lchown", Path: path, Err: err}
		}
		n++
		if mode := uint32(st.Mode); mode&unix.S_IFMT != unix.S_IFLNK && mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			if err := unix.Chmod(path, mode&0o7777); err != nil {
				return &os.PathError{Op: "chmod", Path: path, Err: err}
			}
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("chown rootfs %s to the pod's range: %w", root, err)
	}
	return n, nil
}

// lstatx is lstat with the mount ID (when the kernel gives it).
func lstatx(path string) (*unix.Statx_t, error) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS|unix.STATX_MNT_ID, &st); err != nil {
		return nil, &os.PathError{Op: "statx", Path: path, Err: err}
	}
	return &st, nil
}

// BindClone attaches at dst a plain (not idmapped), private, recursive
// clone of src: the chowned rootfs, reachable from the pod's user
// namespace wherever the bundle is.
func BindClone(src, dst string) error {
	tree, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("clone mount of %s: %w", src, os.NewSyscallError("open_tree", err))
	}
	defer unix.Close(tree)
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Propagation: unix.MS_PRIVATE}); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clone mount of %s: %w", src, os.NewSyscallError("mount_setattr", err))
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attach clone of %s at %s: %w", src, dst, os.NewSyscallError("move_mount", err))
	}
	return nil
}
