package idmap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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

// StageOverlay builds at dst an overlay equivalent to o whose layers are
// all seen through usernsFd: each lower layer is an idmapped clone
// (attached under layersDir/N), and so is the directory that holds the
// upper directory and the staged overlay's work directory (layersDir/upper,
// one clone for both: overlayfs wants them on one mount). The overlay
// itself cannot be idmapped (EINVAL); its layers can (Linux >= 5.19).
// Nothing is chowned: the pod's root sees the upper directory's host-root
// entries as its own, including those written through the original mount
// (podman's /etc/mtab, its mount points for /etc/hosts, podman cp), and
// what the pod writes lands in the upper directory as host root, exactly
// as without a user namespace: the storage (containerd's snapshot,
// podman's container layer) stays as its owner expects it.
//
// The overlay keeps o's ro, nosuid, nodev and noexec (o.Flags). It
// shares o's upper directory but not its work directory: a mount
// recreates its work directory's "work" entry, which leaves the first
// overlay's copy-up broken (EPERM) for writes through the original mount
// (podman cp, nerdctl cp). Its own is WorkDir(o), beside o's. Sharing
// the upper directory needs o mounted with index=off (with the index the
// kernel locks an upper directory to one mount); an o with the index is
// refused (ErrOverlayIndex).
//
// The overlay is mounted with uid:gid, the pod root's host IDs, as its
// filesystem IDs (mountAs): overlayfs creates its work directory and
// copies up with its mounter's credentials, and host root has no ID in
// the upper layer's mapping.
//
// dst and layersDir must be below a StageDir (the layers are attached
// private, and one umount of that directory detaches them with the
// overlay).
func StageOverlay(o *Overlay, dst, layersDir string, usernsFd, uid, gid int) error {
	if o.Upper != "" && o.IndexOn(indexDefault()) {
		how := "its mount options say index=on"
		if !slices.Contains(o.Other, "index=on") {
			how = "the kernel's default: " + indexParam + " is Y, and the mount does not say index=off"
		}
		return fmt.Errorf("the overlay uses the inodes index (%s), which locks its upper directory %s to that one mount: an overlay over idmapped layers cannot share it (the kernel refuses it with EBUSY, and with index=off it would corrupt the original's index). Mount the rootfs with index=off (podman, CRI-O: mountopt = \"nodev,index=off\" under [storage.options.overlay] in storage.conf; containerd's snapshotter does it by itself), or run the container without a pool user namespace: %w", how, o.Upper, ErrOverlayIndex)
	}
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
	if o.Upper != "" {
		if err := stageUpper(&staged, o, filepath.Join(layersDir, "upper"), usernsFd); err != nil {
			return err
		}
	}
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
	if err := os.Mkdir(dst, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	data := staged.Options(lower)
	mount := unix.Mount
	if o.Upper != "" {
		mount = func(source, target, fstype string, flags uintptr, data string) error {
			return mountAs(uid, gid, source, target, fstype, flags, data)
		}
	}
	if err := mount("overlay", dst, "overlay", o.Flags, data); err != nil {
		hint := ""
		switch {
		case errors.Is(err, unix.EBUSY):
			hint = " (the upper directory is in use by the original overlay mounted with index=on; mount the rootfs with index=off)"
		case errors.Is(err, unix.EINVAL):
			hint = " (overlayfs takes idmapped layers from Linux 5.19; the kernel log says which option or layer it refused)"
		}
		return fmt.Errorf("mount idmapped overlay at %s: %w%s", dst, &os.PathError{Op: "mount", Path: dst, Err: err}, hint)
	}
	_ = unix.Mount("", dst, "", unix.MS_PRIVATE, "")
	// overlayfs falls back to read-only, with only a line in the kernel
	// log, when it cannot set up its work directory; the pod would fail
	// later on its first write.
	var st unix.Statfs_t
	if err := unix.Statfs(dst, &st); err != nil {
		return &os.PathError{Op: "statfs", Path: dst, Err: err}
	}
	if st.Flags&unix.ST_RDONLY != 0 && o.Flags&unix.MS_RDONLY == 0 {
		return fmt.Errorf("the idmapped overlay at %s came up read-only: overlayfs could not use its work directory %s through the idmapped upper layer (the kernel log says why)", dst, staged.Work)
	}
	return nil
}

// stageUpper attaches at dst an idmapped clone of the directory holding
// o's upper directory and WorkDir(o), and points staged's upper and work
// directories into it. The clone is of that directory's mount alone:
// if a mount hides the upper directory there (it is a mount point of its
// own), the clone would show what lies beneath, and this is refused.
func stageUpper(staged, o *Overlay, dst string, usernsFd int) error {
	work := WorkDir(o)
	base, relUpper, relWork, err := upperBase(filepath.Clean(o.Upper), work)
	if err != nil {
		return err
	}
	if err := os.Mkdir(work, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("work directory of the idmapped overlay: %w", err)
	}
	if o.Volatile() {
		// A volatile overlay marks its work directory (work/incompat/
		// volatile) and the kernel refuses to mount on a marked one
		// (EINVAL): the mark of an earlier create of this container goes,
		// as containers/storage removes its own before it mounts.
		if err := os.RemoveAll(filepath.Join(work, "work", "incompat", "volatile")); err != nil {
			return fmt.Errorf("work directory of the idmapped overlay: %w", err)
		}
	}
	if err := Mount(base, dst, usernsFd, TopOnly); err != nil {
		return fmt.Errorf("overlay upper layer (%s): %w", o.Upper, err)
	}
	staged.Upper, staged.Work = filepath.Join(dst, relUpper), filepath.Join(dst, relWork)
	for _, p := range [][2]string{{o.Upper, staged.Upper}, {work, staged.Work}} {
		var want, got unix.Stat_t
		if err := unix.Stat(p[0], &want); err != nil {
			return &os.PathError{Op: "stat", Path: p[0], Err: err}
		}
		if err := unix.Stat(p[1], &got); err != nil || got.Dev != want.Dev || got.Ino != want.Ino {
			return fmt.Errorf("overlay upper directory %s and work directory %s: %s is not the same directory through the mount of %s (a mount point below %s?); give the overlay an upper and a work directory on one mount, not mount points of their own", o.Upper, work, p[0], base, base)
		}
	}
	return nil
}

// mountAs is mount(2) called with filesystem IDs uid:gid and root's
// capabilities, which an overlay keeps as its mounter's credentials (the
// old mount API's rule): it creates its work directory and copies files
// up with them. Through an idmapped upper layer, host root (fsuid 0),
// which the mapping leaves out, can create nothing there (EOVERFLOW): the
// kernel then mounts the overlay read-only, and every copy-up fails.
// Setting the filesystem IDs clears the filesystem capabilities from the
// effective set; they are raised again from the permitted set. The call
// runs on a thread of its own that exits with its goroutine (the thread
// is never unlocked), so no other goroutine runs with these credentials.
func mountAs(uid, gid int, source, target, fstype string, flags uintptr, data string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- func() error {
			hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
			var caps [2]unix.CapUserData
			if err := unix.Capget(&hdr, &caps[0]); err != nil {
				return os.NewSyscallError("capget", err)
			}
			unix.Setfsgid(gid)
			unix.Setfsuid(uid)
			// setfs[ug]id say nothing of a failure; ask back.
			if got, _ := unix.SetfsuidRetUid(-1); got != uid {
				return fmt.Errorf("set the filesystem uid to %d for the overlay mount: it is %d", uid, got)
			}
			if got, _ := unix.SetfsgidRetGid(-1); got != gid {
				return fmt.Errorf("set the filesystem gid to %d for the overlay mount: it is %d", gid, got)
			}
			if err := unix.Capset(&hdr, &caps[0]); err != nil {
				return os.NewSyscallError("capset", err)
			}
			return unix.Mount(source, target, fstype, flags, data)
		}()
	}()
	return <-errc
}

// indexParam is the overlay module's default for index=.
const indexParam = "/sys/module/overlay/parameters/index"

// indexDefault reads indexParam (off where it cannot be read: a kernel
// without the index feature).
func indexDefault() bool {
	b, err := os.ReadFile(indexParam)
	return err == nil && strings.TrimSpace(string(b)) == "Y"
}
