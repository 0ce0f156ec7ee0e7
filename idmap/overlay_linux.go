package idmap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// OverlayAt returns the overlay mounted exactly at path, or ErrNotOverlay
// when path is not an overlay mountpoint. The statfs check keeps the
// common case (a plain directory rootfs) from looking the mount up.
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
	m, err := topMountAt(real)
	if errors.Is(err, errNoStatmount) {
		m, err = topMountInfo(real)
	}
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, ErrNotOverlay // a directory inside an overlay
	}
	if m.fsType != "overlay" {
		return nil, ErrNotOverlay
	}
	o, err := ParseOverlay(m.vfsOptions)
	if errors.Is(err, ErrNotOverlay) {
		// An overlay is mounted here: never go on as if it were a plain
		// directory (idmapping an overlay fails, and a chown of it would
		// copy every file up).
		return nil, fmt.Errorf("overlay mounted at %s: no lower layer in its options %q", real, m.vfsOptions)
	}
	if err != nil {
		return nil, fmt.Errorf("overlay mounted at %s: %w", real, err)
	}
	if err := resolveLayers(o, real); err != nil {
		return nil, fmt.Errorf("overlay mounted at %s: %w", real, err)
	}
	o.Flags = m.flags
	return o, nil
}

// topMountInfo is topMountAt read from /proc/self/mountinfo, for kernels
// without statmount(2).
func topMountInfo(path string) (*mountEntry, error) {
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(path))
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return topEntry(mounts), nil
}

// topEntry is the top one of mountinfo's entries at one mount point (the
// last), nil if there are none.
func topEntry(mounts []*mountinfo.Info) *mountEntry {
	if len(mounts) == 0 {
		return nil
	}
	m := mounts[len(mounts)-1]
	return &mountEntry{fsType: m.FSType, vfsOptions: m.VFSOptions, flags: mountFlags(m.Options)}
}

// mountFlags picks out of a mount's per-mount options (mountinfo's sixth
// field) the restrictions that a rebuilt overlay must keep.
func mountFlags(opts string) uintptr {
	var flags uintptr
	for _, opt := range strings.Split(opts, ",") {
		switch opt {
		case "ro":
			flags |= unix.MS_RDONLY
		case "nosuid":
			flags |= unix.MS_NOSUID
		case "nodev":
			flags |= unix.MS_NODEV
		case "noexec":
			flags |= unix.MS_NOEXEC
		}
	}
	return flags
}

// resolveLayers makes o's relative layer paths absolute. An overlay whose
// options would come near a page (images of ~40 layers and more) is
// mounted from the storage's own directory with relative paths, and the
// kernel shows them as given:
//   - containerd (compactLowerdirOption in its mount package): the lower
//     layers relative to its snapshots directory (lowerdir=N/fs:M/fs);
//     the upper layer stays absolute, snapshots/<id>/fs;
//   - containers/storage (CRI-O, podman): every path relative to its
//     overlay directory (lowerdir=l/X:l/Y,upperdir=<id>/diff,
//     workdir=<id>/work), mounted at <that directory>/<id>/merged.
//
// So relative paths are taken from an absolute upper layer's grandparent,
// else from the mount point's grandparent; each must be a directory on the
// upper layer's filesystem there.
func resolveLayers(o *Overlay, mountpoint string) error {
	relative := !filepath.IsAbs(o.Upper) && o.Upper != "" || !filepath.IsAbs(o.Work) && o.Work != ""
	for _, l := range o.Lower {
		relative = relative || !filepath.IsAbs(l)
	}
	if !relative {
		return nil
	}
	var base string
	switch {
	case filepath.IsAbs(o.Upper):
		base = filepath.Dir(filepath.Dir(o.Upper))
	case o.Upper != "":
		base = filepath.Dir(filepath.Dir(mountpoint))
	default:
		return fmt.Errorf("lower layers %q are relative paths and there is no upper layer to place them by: mount the rootfs with absolute layer paths", strings.Join(o.Lower, ":"))
	}
	var dev uint64
	dir := func(what, l string) (string, error) {
		if filepath.IsAbs(l) {
			return l, nil
		}
		abs := filepath.Join(base, l)
		var st unix.Stat_t
		err := unix.Stat(abs, &st)
		if err == nil && dev == 0 {
			dev = st.Dev // the upper layer's, which comes first
		}
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Dev != dev {
			return "", fmt.Errorf("%s is the relative path %q (containerd and containers/storage write them so for images of many layers, relative to their storage directory), and %s is not a directory of the upper layer's filesystem: cannot tell where the kernel found it; mount the rootfs with absolute layer paths", what, l, abs)
		}
		return abs, nil
	}
	if filepath.IsAbs(o.Upper) {
		var st unix.Stat_t
		if err := unix.Stat(o.Upper, &st); err != nil {
			return fmt.Errorf("upper layer: %w", &os.PathError{Op: "stat", Path: o.Upper, Err: err})
		}
		dev = st.Dev
	}
	var err error
	if o.Upper, err = dir("the upper layer", o.Upper); err != nil {
		return err
	}
	if o.Work, err = dir("the work directory", o.Work); err != nil {
		return err
	}
	for i, l := range o.Lower {
		if o.Lower[i], err = dir(fmt.Sprintf("lower layer %d", i), l); err != nil {
			return err
		}
	}
	return nil
}

// WorkDir is the work directory of the overlay StageOverlay builds on o:
// beside o's and named after it (two overlays' work directories may share
// a parent), on its filesystem (overlayfs wants upper and work on one),
// inside the snapshot or layer directory that containerd or podman remove
// with the container ("" for an overlay without an upper layer).
func WorkDir(o *Overlay) string {
	if o.Work == "" {
		return ""
	}
	return filepath.Clean(o.Work) + ".runc-userns"
}

// StageOverlay builds at dst an overlay equivalent to o whose lower layers
// are idmapped clones (attached under layersDir/N) seen through usernsFd,
// and whose upper directory is owned by uid:gid, the pod's root, so that
// it can write its rootfs. The overlay itself cannot be idmapped (EINVAL),
// nor can its upper layer: files the container writes land in the upper
// directory with the pod's host IDs. Only the upper directory's own owner
// changes (one inode, whatever the image's size); entries already in a
// non-empty upper keep their host owners and look unmapped (nobody)
// inside unless they belong to the pod's range.
//
// The overlay keeps o's ro, nosuid, nodev and noexec (o.Flags). It
// shares o's upper directory but not its work directory: a mount
// recreates its work directory's "work" entry, which leaves the first
// overlay's copy-up broken (EPERM) for writes through the original mount
// (podman cp, nerdctl cp). Its own is WorkDir(o), beside o's.
//
// dst and layersDir must be below a StageDir (the layers are attached
// private, and one umount of that directory detaches them with the
// overlay).
func StageOverlay(o *Overlay, dst, layersDir string, usernsFd, uid, gid int) error {
	if err := os.MkdirAll(layersDir, 0o711); err != nil {
		return err
	}
	lower := make([]string, len(o.Lower))
	for i, l := range o.Lower {
		lower[i] = filepath.Join(layersDir, strconv.Itoa(i))
		if err := Mount(l, lower[i], usernsFd, TopOnly); err != nil {
			return fmt.Errorf("overlay lower layer %d (%s): %w", i, l, err)
		}
	}
	staged := *o
	staged.Work = WorkDir(o)
	// mount(2) takes one page of options. With many layers, name them
	// through a descriptor of layersDir (/proc/self/fd/N/<i>: ~18 bytes a
	// layer, ~200 layers a page) rather than by their full paths.
	if len(staged.Options(lower)) >= unix.Getpagesize()-512 {
		dir, err := unix.Open(layersDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "open", Path: layersDir, Err: err}
		}
		defer unix.Close(dir)
		for i := range lower {
			lower[i] = "/proc/self/fd/" + strconv.Itoa(dir) + "/" + strconv.Itoa(i)
		}
		if n := len(staged.Options(lower)); n >= unix.Getpagesize() {
			return fmt.Errorf("overlay of %d lower layers: its mount options take %d bytes, more than a page even with short layer names; use an image of fewer layers (squash it), or run the pod without a pool user namespace", len(lower), n)
		}
	}
	if o.Upper != "" {
		if err := os.Lchown(o.Upper, uid, gid); err != nil {
			return fmt.Errorf("give the overlay's upper layer to the pod's root: %w", err)
		}
		if err := os.Mkdir(staged.Work, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("work directory of the idmapped overlay: %w", err)
		}
	}
	if err := os.Mkdir(dst, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	data := staged.Options(lower)
	if err := unix.Mount("overlay", dst, "overlay", o.Flags, data); err != nil {
		hint := ""
		if errors.Is(err, unix.EBUSY) {
			hint = " (the upper directory is in use by the original overlay mounted with index=on; mount the rootfs with index=off)"
		}
		return fmt.Errorf("mount idmapped overlay at %s: %w%s", dst, &os.PathError{Op: "mount", Path: dst, Err: err}, hint)
	}
	_ = unix.Mount("", dst, "", unix.MS_PRIVATE, "")
	return nil
}
