package idmap

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/runc-userns/runc-userns/libuserns"
	"golang.org/x/sys/unix"
)

// makeTree writes n entries (files in directories of 100) under dir.
func makeTree(b *testing.B, dir string, n int) {
	b.Helper()
	for i := 0; i < n; i++ {
		d := filepath.Join(dir, fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d", i)), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

func dropCaches(b *testing.B) {
	unix.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0o200); err != nil {
		b.Skipf("cold runs need to drop the page cache: %v", err)
	}
}

// stagingDir returns a fresh directory to stage an idmapped rootfs in, on
// a tmpfs as the wrapper's is: it stages under its stateDir, /run on a node.
// On a disk, a cold run would time the disk read of the staging target's
// directory, which a node never pays. /dev/shm is the tmpfs every Linux
// has; without one the staging target is in the test's temp dir, said once.
func stagingDir(b *testing.B) string {
	b.Helper()
	var fs unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &fs); err != nil || fs.Type != unix.TMPFS_MAGIC {
		b.Logf("no tmpfs at /dev/shm: staging on %s, so cold runs include reading its directory from disk", os.TempDir())
		return b.TempDir()
	}
	dir, err := os.MkdirTemp("/dev/shm", "runc-userns-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// BenchmarkRootfsPrep compares making a rootfs usable by a pod's root:
// an idmapped clone (including obtaining the user namespace fd, as a
// sandbox's create does) against chowning every entry to the pod's range
// (ShiftOwners, what chown -R / userns-remap do), by tree size, with the
// page cache warm and cold. The idmapped clone must not depend on size.
// Cold drops every cache, so it includes reading the rootfs's path from
// disk; the staging target is on a tmpfs, as in the wrapper (stagingDir).
func BenchmarkRootfsPrep(b *testing.B) {
	if os.Getuid() != 0 {
		b.Skip("needs root: mounts and user namespaces")
	}
	m := libuserns.PodMappings(3000000000, 65536)
	for _, n := range []int{1000, 10000, 60000} {
		tree := b.TempDir()
		makeTree(b, tree, n)
		for _, cold := range []bool{false, true} {
			temp := "warm"
			if cold {
				temp = "cold"
			}
			b.Run(fmt.Sprintf("idmap/%s/%d", temp, n), func(b *testing.B) {
				dst := filepath.Join(stagingDir(b), "rootfs")
				for i := 0; i < b.N; i++ {
					if cold {
						b.StopTimer()
						dropCaches(b)
						b.StartTimer()
					}
					ns, err := libuserns.NewUserns(m, m)
					if err != nil {
						b.Fatal(err)
					}
					if err := Mount(tree, dst, int(ns.Fd()), Tree); err != nil {
						b.Fatal(err)
					}
					ns.Close()
					b.StopTimer()
					if err := Detach(dst); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			})
			b.Run(fmt.Sprintf("chown/%s/%d", temp, n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					if cold {
						dropCaches(b)
					}
					b.StartTimer()
					if _, err := ShiftOwners(tree, 3000000000, 65536); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					unshift(b, tree)
					b.StartTimer()
				}
			})
		}
	}
}

// unshift gives the tree back to host root.
func unshift(b *testing.B, tree string) {
	b.Helper()
	err := filepath.Walk(tree, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 0, 0)
	})
	if err != nil {
		b.Fatal(err)
	}
}
