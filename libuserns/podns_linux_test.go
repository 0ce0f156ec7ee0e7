package libuserns

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// NewPodNamespaces with ipcUTS makes an IPC and a UTS namespace that the
// new user namespace owns (what lets runc join them from inside it, mount
// mqueue and set the hostname); without, only the user namespace. OpenNS
// and OpenPinnedType tell the types apart.
func TestNewPodNamespaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for user namespaces and mounts")
	}
	m := PodMappings(3000000000, 65536)
	t.Run("with IPC and UTS", func(t *testing.T) {
		n, err := NewPodNamespaces(m, m, true)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		for _, c := range []struct {
			name   string
			f      *os.File
			nstype int
			own    string
		}{{"ipc", n.IPC, unix.CLONE_NEWIPC, "/proc/self/ns/ipc"}, {"uts", n.UTS, unix.CLONE_NEWUTS, "/proc/self/ns/uts"}} {
			if c.f == nil {
				t.Fatalf("%s: nil", c.name)
			}
			if typ, err := unix.IoctlRetInt(int(c.f.Fd()), unix.NS_GET_NSTYPE); err != nil || typ != c.nstype {
				t.Errorf("%s: NS_GET_NSTYPE = %#x, %v; want %#x", c.name, typ, err, c.nstype)
			}
			if owned, err := OwnedBy(c.f, n.User); err != nil || !owned {
				t.Errorf("%s: owned by the new user namespace = %v, %v; want true", c.name, owned, err)
			}
			if sameNS(t, c.f, c.own) {
				t.Errorf("%s: our own namespace", c.name)
			}
			pin := filepath.Join(t.TempDir(), c.name)
			if err := Pin(c.f, pin); err != nil {
				t.Fatal(err)
			}
			if f, err := OpenPinnedType(pin, c.nstype); err != nil {
				t.Errorf("OpenPinnedType(%s): %v", c.name, err)
			} else {
				f.Close()
			}
			if f, err := OpenNS(pin, c.nstype); err != nil {
				t.Errorf("OpenNS(%s): %v", c.name, err)
			} else {
				f.Close()
			}
			if _, err := OpenPinned(pin); err == nil {
				t.Errorf("OpenPinned(%s) took it for a user namespace", c.name)
			}
			if err := Unpin(pin); err != nil {
				t.Error(err)
			}
		}
		WaitHolders()
	})
	t.Run("user namespace only", func(t *testing.T) {
		n, err := NewPodNamespaces(m, m, false)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		if n.IPC != nil || n.UTS != nil {
			t.Errorf("IPC %v, UTS %v: want none", n.IPC, n.UTS)
		}
		WaitHolders()
	})
	t.Run("OpenNS refuses", func(t *testing.T) {
		plain := filepath.Join(t.TempDir(), "plain")
		if err := os.WriteFile(plain, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name, path string
			nstype     int
		}{
			{"a plain file", plain, unix.CLONE_NEWIPC},
			{"another type", "/proc/self/ns/uts", unix.CLONE_NEWIPC},
			{"missing", plain + ".gone", unix.CLONE_NEWIPC},
		} {
			if f, err := OpenNS(c.path, c.nstype); err == nil {
				f.Close()
				t.Errorf("%s: OpenNS succeeded", c.name)
			}
		}
	})
}
