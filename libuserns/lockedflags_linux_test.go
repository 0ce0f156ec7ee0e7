package libuserns

import (
	"os"
	"reflect"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

func TestLockedFlags(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("mounting the nosuid,nodev,noexec tmpfs source needs root")
	}
	src := t.TempDir()
	if err := unix.Mount("tmpfs", src, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(src, unix.MNT_DETACH) })
	cases := []struct {
		name  string
		mount specs.Mount
		want  []string
	}{
		{"ro bind gets the source's locked flags", specs.Mount{Destination: "/dev/shm", Type: "bind", Source: src, Options: []string{"rbind", "ro"}}, []string{"nosuid", "nodev", "noexec"}},
		{"flags already there", specs.Mount{Destination: "/x", Type: "bind", Source: src, Options: []string{"rbind", "ro", "nosuid", "nodev", "noexec"}}, nil},
		{"explicit dev is left to runc", specs.Mount{Destination: "/x", Source: src, Options: []string{"bind", "ro", "dev"}}, []string{"nosuid", "noexec"}},
		{"no remount, no change", specs.Mount{Destination: "/x", Type: "bind", Source: src, Options: []string{"rbind", "rprivate"}}, nil},
		{"not a bind mount", specs.Mount{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"ro"}}, nil},
		{"missing source", specs.Mount{Destination: "/x", Type: "bind", Source: "/nonexistent/src", Options: []string{"ro"}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &specs.Spec{Mounts: []specs.Mount{c.mount}}
			add := LockedFlags(s, "/bundle")
			if !reflect.DeepEqual(add[0], c.want) {
				t.Fatalf("LockedFlags = %v, want %v", add[0], c.want)
			}
			if err := LockedFlagsModifier(add).Modify(s); err != nil {
				t.Fatal(err)
			}
			want := append(append([]string(nil), c.mount.Options...), c.want...)
			if !reflect.DeepEqual(s.Mounts[0].Options, want) {
				t.Errorf("options after Modify = %v, want %v", s.Mounts[0].Options, want)
			}
		})
	}
}
