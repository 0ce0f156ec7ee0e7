package idmap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// OverlayAt returns the overlay mounted exactly at path, or ErrNotOverlay
// when path is not an overlay mountpoint. The statfs check keeps the
// common case (a plain directory rootfs) from parsing mountinfo.
func OverlayAt(path string) (*Overlay, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return nil, &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	if st.Type != unix.OVERLAYFS_SUPER_MAGIC {
		return nil, ErrNotOverlay
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(real))
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	if len(mounts) == 0 {
		return nil, ErrNotOverlay // a directory inside an overlay
	}
	m := mounts[len(mounts)-1] // the top one
	if m.FSType != "overlay" {
		return nil, ErrNotOverlay
	}
	return ParseOverlay(m.VFSOptions)
}

// StageOverlay builds at dst an overlay equivalent to o whose lower layers
// are idmapped clones (attached under layersDir/N) seen through usernsFd,
// and whose upper and work directories are owned by uid:gid, the pod's
// root, so that it can write its rootfs. The overlay itself cannot be
// idmapped (EINVAL), nor can its upper layer: files the container writes
// land in the upper directory with the pod's host IDs. Only the upper and
// work directories' own owners change (two inodes, whatever the image's
// size); entries already in a non-empty upper keep their host owners and
// look unmapped (nobody) inside unless they belong to the pod's range.
func StageOverlay(o *Overlay, dst, layersDir string, usernsFd, uid, gid int) error {
	if err := os.MkdirAll(layersDir, 0o711); err != nil {
		return err
	}
	if err := StageDir(layersDir); err != nil {
		return err
	}
	lower := make([]string, len(o.Lower))
	for i, l := range o.Lower {
		lower[i] = filepath.Join(layersDir, strconv.Itoa(i))
		if err := Mount(l, lower[i], usernsFd, false); err != nil {
			return fmt.Errorf("overlay lower layer %d: %w", i, err)
		}
	}
	for _, d := range []string{o.Upper, o.Work} {
		if d == "" {
			continue
		}
		if err := os.Lchown(d, uid, gid); err != nil {
			return fmt.Errorf("give the overlay's upper layer to the pod's root: %w", err)
		}
	}
	if err := os.Mkdir(dst, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	data := o.Options(lower)
	if err := unix.Mount("overlay", dst, "overlay", 0, data); err != nil {
		hint := ""
		if errors.Is(err, unix.EBUSY) {
			hint = " (the upper directory is in use by the original overlay mounted with index=on; mount the rootfs with index=off)"
		}
		return fmt.Errorf("mount idmapped overlay at %s: %w%s", dst, &os.PathError{Op: "mount", Path: dst, Err: err}, hint)
	}
	_ = unix.Mount("", dst, "", unix.MS_PRIVATE, "")
	return nil
}
