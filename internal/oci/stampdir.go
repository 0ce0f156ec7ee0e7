package oci

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrUntrustedStateDir: the stateDir a stamp names is not root-owned and
// private, so its key may not verify anything.
var ErrUntrustedStateDir = errors.New("stateDir not root-owned and private")

// ForeignStampKey returns the key of stateDir dir for a stamp that names
// dir while the call's config names another stateDir (podman runs delete
// with no environment: a container created with RUNC_USERNS_CONFIG is
// deleted under the config at the default path). The stamp names dir,
// and a pod author may write the stamp, so dir is trusted only in the
// shape a configured stateDir has: an absolute path whose every directory
// is root-owned and writable by no one else (or, like /tmp, sticky, which
// keeps others from replacing root's entries in it), dir itself root-owned
// with no read or write for group and others (MkdirTraversable makes it
// 0711), and its key a root-owned 0600 file of 32 bytes (StampKey). Only
// host root can make such a directory; but a pod that runs as host root
// with a writable host volume can, which the configured stateDir's key
// resists (SECURITY.md says so): callers take no runtime to execute from
// a stamp verified this way.
func ForeignStampKey(dir string) ([]byte, error) {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return nil, fmt.Errorf("%w: %q is not an absolute clean path", ErrUntrustedStateDir, dir)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUntrustedStateDir, err)
	}
	if err := checkPrivateDir(real); err != nil {
		return nil, err
	}
	// Every directory is root's now: the key is read by the same path.
	return StampKey(real, false)
}

// checkPrivateDir checks the directories of the clean, symlink-free path
// dir from / down (ForeignStampKey's rule).
func checkPrivateDir(dir string) error {
	d := "/"
	parts := strings.Split(strings.TrimPrefix(dir, "/"), "/")
	for i := -1; i < len(parts); i++ {
		if i >= 0 {
			d = filepath.Join(d, parts[i])
		}
		st, err := os.Lstat(d)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrUntrustedStateDir, err)
		}
		sys, _ := st.Sys().(*syscall.Stat_t)
		perm := st.Mode().Perm()
		switch {
		case !st.IsDir():
			return fmt.Errorf("%w: %s is not a directory", ErrUntrustedStateDir, d)
		case sys == nil || sys.Uid != 0:
			return fmt.Errorf("%w: %s is not owned by root", ErrUntrustedStateDir, d)
		case i == len(parts)-1 && perm&0o066 != 0:
			return fmt.Errorf("%w: %s has mode %#o, which lets others read or write it (a stateDir is 0711)", ErrUntrustedStateDir, d, perm)
		case perm&0o022 != 0 && st.Mode()&os.ModeSticky == 0:
			return fmt.Errorf("%w: %s has mode %#o, writable by others", ErrUntrustedStateDir, d, perm)
		}
	}
	return nil
}
