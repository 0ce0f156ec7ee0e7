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
// Mount points below root are not crossed. It returns how many entries it
// changed.
func ShiftOwners(root string, hostID, size uint32) (int, error) {
	var rootSt unix.Stat_t
	if err := unix.Lstat(root, &rootSt); err != nil {
		return 0, &os.PathError{Op: "lstat", Path: root, Err: err}
	}
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			return &os.PathError{Op: "lstat", Path: path, Err: err}
		}
		if st.Dev != rootSt.Dev {
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
		if st.Mode&unix.S_IFMT != unix.S_IFLNK && st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			if err := unix.Chmod(path, st.Mode&0o7777); err != nil {
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
