package oci

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// StampKeyFile is the node-local secret that signs stamps, in stateDir.
// It is created with the first stamp and lives as long as stateDir (a
// tmpfs: a reboot clears it together with every container it stamped).
const StampKeyFile = "stamp.key"

// ErrForgedStamp: a stamp's MAC does not verify with this node's key.
var ErrForgedStamp = errors.New("runc-userns stamp not written by this node")

// ErrCopiedStamp: a stamp this node wrote, for another container.
var ErrCopiedStamp = errors.New("runc-userns stamp written for another container")

// ErrUnboundStamp: a version 1 stamp (of an earlier release, bound to no
// container) where only a bound one is taken.
var ErrUnboundStamp = errors.New("runc-userns stamp of an earlier release, bound to no container")

// StampVersion is the version of the stamps written now: 2, bound to
// their container (Stamp.ID, Root, Bundle).
const StampVersion = 2

// Binding is what a stamp is checked against; an empty field is not
// compared. A create checks the bundle: the stamp must be the one written
// into that very config.json (a rerun of the bundle under another ID or
// root is fine: it undoes the edits of the earlier create). A delete, an
// exec and a rebuild check the ID and runc root of the container whose
// runc state carries it (runc records the bundle as it resolved it, which
// need not be the spelling the stamp has).
type Binding struct {
	ID, Root, Bundle string
}

func (s *Stamp) mac(key []byte) string {
	c := *s
	c.MAC = ""
	m := hmac.New(sha256.New, key)
	m.Write([]byte(c.Encode()))
	return hex.EncodeToString(m.Sum(nil))
}

// Sign sets the stamp's MAC.
func (s *Stamp) Sign(key []byte) { s.MAC = s.mac(key) }

// Verify checks the stamp's MAC and that it was written for container b.
// A version 1 stamp verifies by its MAC alone unless bound is set: one
// written before stamps were bound, by an earlier release, to a container
// that still runs.
func (s *Stamp) Verify(key []byte, b Binding, bound bool) error {
	if s.MAC == "" || !hmac.Equal([]byte(s.MAC), []byte(s.mac(key))) {
		return ErrForgedStamp
	}
	if s.Version < StampVersion {
		if bound {
			return ErrUnboundStamp
		}
		return nil
	}
	if b.ID != "" && s.ID != b.ID || b.Root != "" && filepath.Clean(s.Root) != filepath.Clean(b.Root) ||
		b.Bundle != "" && filepath.Clean(s.Bundle) != filepath.Clean(b.Bundle) {
		return fmt.Errorf("%w: it was written for container %s of runc root %s, bundle %s", ErrCopiedStamp, s.ID, s.Root, s.Bundle)
	}
	return nil
}

// StampKey returns the key in dir, creating it (0600, 32 random bytes)
// when create is set. A key file that is not a root-owned 0600 regular
// file is refused.
func StampKey(dir string, create bool) ([]byte, error) {
	path := filepath.Join(dir, StampKeyFile)
	for {
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err == nil {
			defer f.Close()
			st, err := f.Stat()
			if err != nil {
				return nil, err
			}
			sys, _ := st.Sys().(*syscall.Stat_t)
			if !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 || sys == nil || sys.Uid != 0 || st.Size() != 32 {
				return nil, fmt.Errorf("stamp key %s must be a root-owned 0600 file of 32 bytes: remove it to have it made again", path)
			}
			key := make([]byte, 32)
			if _, err := f.ReadAt(key, 0); err != nil {
				return nil, fmt.Errorf("read stamp key: %w", err)
			}
			return key, nil
		}
		if !errors.Is(err, os.ErrNotExist) || !create {
			return nil, fmt.Errorf("stamp key: %w", err)
		}
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o711); err != nil {
			return nil, err
		}
		tmp, err := os.CreateTemp(dir, ".stamp.key-*")
		if err != nil {
			return nil, err
		}
		_, werr := tmp.Write(key)
		serr := tmp.Sync()
		cerr := tmp.Close()
		if werr != nil || serr != nil || cerr != nil {
			os.Remove(tmp.Name())
			return nil, fmt.Errorf("write stamp key: %w", errors.Join(werr, serr, cerr))
		}
		// link, not rename: of two racing creators the first key wins and
		// the other reads it.
		err = os.Link(tmp.Name(), path)
		os.Remove(tmp.Name())
		if err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("write stamp key: %w", err)
		}
	}
}
