package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/runc-userns/runc-userns/idmap"
	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/libuserns"
)

// stagedEntries lists a container's staging mount points, the overlay (or
// rootfs clone) first, then what it is built on: the order to detach in.
func (l Layout) stagedEntries(root, id string) ([]string, error) {
	entries := []string{l.StagedRootfs(root, id)}
	for _, dir := range []string{l.MountsDir(root, id), l.LayersDir(root, id)} {
		list, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		for _, e := range list {
			entries = append(entries, filepath.Join(dir, e.Name()))
		}
	}
	return entries, nil
}

// DetachStaged detaches a container's staging mounts (rootfs, bind
// mounts, overlay layers, a container:<ID> target's pins); the files and
// directories stay. They all sit on the container directory's own mount
// (idmap.StageDir, made by the create before it mounts anything below
// it), detached with its contents in one umount. What an
// older create staged sits on one mount for each staging directory
// (rootfs, mounts, layers), or on its own mounts below a plain directory:
// thorough tries each staging directory and every entry below it, for a
// leftover of any create; without it, that runs only when the container
// directory was not a mount (an umount of a plain directory fails at
// once, EINVAL, but a dozen of them cost ~0.3 ms), which is enough on the
// tail of a create that ran a thorough detach before it staged anything.
func DetachStaged(containerDir string, thorough bool) error {
	detached, err := idmap.DetachAll(containerDir)
	if err != nil || (detached && !thorough) {
		return err
	}
	for i, dir := range stagingMounts(containerDir) {
		nested := i > 0 // [0], the rootfs, is one mount: nothing below it was staged
		if err := detachStagingDir(dir, nested, thorough); err != nil {
			return err
		}
	}
	return nil
}

// detachStagingDir detaches what is mounted at dir and, when nested, below
// it (see DetachStaged).
func detachStagingDir(dir string, nested, thorough bool) error {
	detached, err := idmap.DetachAll(dir)
	if err != nil || !nested || (detached && !thorough) {
		return err
	}
	list, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, e := range list {
		if err := idmap.Detach(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// RemoveStaged detaches a container's staging mounts and removes their
// files and directories. Never os.RemoveAll: an entry could still be a
// mount of the container's image or of a volume.
func (l Layout) RemoveStaged(root, id string) error {
	if err := DetachStaged(l.ContainerDir(root, id), true); err != nil {
		return err
	}
	entries, err := l.stagedEntries(root, id)
	if err != nil {
		return err
	}
	// A record's temp file, left by a create killed while writing it,
	// would keep the container's directory.
	if err := oci.RemoveTemps(l.NetjoinRecord(root, id)); err != nil {
		return fmt.Errorf("remove staging entry: %w", err)
	}
	// netns.tmp: the temp name of releases before ReplaceFile's.
	entries = append(entries, l.NetjoinRecord(root, id), l.NetjoinRecord(root, id)+".tmp", l.MountsDir(root, id), l.LayersDir(root, id), l.ContainerDir(root, id))
	for _, p := range entries {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove staging entry: %w", err)
		}
	}
	_ = os.Remove(filepath.Dir(l.ContainerDir(root, id))) // the root's dir, if now empty
	return nil
}

// UnpinPod drops the pod's pinned namespaces (user, IPC, UTS) and its
// directory.
func (l Layout) UnpinPod(owner string) error {
	for _, pin := range []string{l.PodIPC(owner), l.PodUTS(owner), l.Pin(owner)} {
		if err := libuserns.Unpin(pin); err != nil {
			return err
		}
	}
	for _, f := range []string{l.Mapping(owner), l.PodCgroup(owner)} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if err := oci.RemoveTemps(f); err != nil {
			return fmt.Errorf("remove pod dir: %w", err)
		}
	}
	if err := os.Remove(l.PodDir(owner)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove pod dir: %w", err)
	}
	return nil
}

// MkdirPrivate creates the container directory dir below base (its
// parents by MkdirTraversable) so that no one but host root and, with gid
// not 0, the container's root (host gid gid, the group of a pod's root)
// can ever traverse it: made 0700, then given to group gid, then opened to
// it (0710, search only: the pod's root cannot rename what is staged in
// it). At no moment can anyone else search it, so no one else can hold a
// working directory or an open file below it. A directory left by an
// earlier create gets the same owner and mode.
//
// The parent, the runc root's directory, is shared: a create or delete of
// another container of that root removes it once empty (RemoveStaged),
// and until dir exists in it that can happen between its MkdirAll and
// the Mkdir of dir, so the parents are made again on ENOENT (or EEXIST). Once dir
// exists the parent is not empty and stays. Each other create or delete
// removes it at most once, so the tries outnumber any real contention.
func MkdirPrivate(base, dir string, gid int) error {
	var err error
	for try := 0; try < 100; try++ {
		if err = MkdirTraversable(base, filepath.Dir(dir)); err == nil {
			if err = os.Mkdir(dir, 0o700); errors.Is(err, os.ErrExist) {
				err = nil
			}
		}
		// EEXIST too: MkdirAll's mkdir found the parent, which was
		// gone by its lstat.
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, os.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	mode := os.FileMode(0o700)
	if gid != 0 {
		mode = 0o710
	}
	if st.Mode().Perm() != mode {
		// Close it first: a directory of an earlier version may be
		// open to all.
		if err := os.Chmod(dir, 0o700); err != nil {
			return err
		}
	}
	if err := os.Lchown(dir, 0, gid); err != nil {
		return err
	}
	return os.Chmod(dir, mode)
}

// MkdirTraversable creates dir and its parents below base with mode 0711,
// makes base traversable, and checks that every directory above base can
// be searched by others: runc mounts the staged rootfs from inside the
// pod's user namespace, where host permissions for "other" apply.
func MkdirTraversable(base, dir string) error {
	base, dir = filepath.Clean(base), filepath.Clean(dir)
	if !strings.HasPrefix(dir, base+"/") && dir != base {
		return fmt.Errorf("%s is not below stateDir %s", dir, base) // never chmod outside it
	}
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil {
			return err
		}
		if d == base || d == filepath.Dir(d) {
			break
		}
	}
	for d := filepath.Dir(base); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("stateDir %s is not reachable from a pod's user namespace: %s has mode %#o; give it search permission for others (chmod o+x) or choose another stateDir", base, d, st.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
