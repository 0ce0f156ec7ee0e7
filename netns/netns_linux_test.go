package netns

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestEnter(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("setns(CLONE_NEWNET) needs root")
	}
	// A fresh network namespace, held by an fd of this process.
	runtime.LockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		t.Fatal(err)
	}
	fresh, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		t.Fatal(err)
	}
	runtime.UnlockOSThread()
	defer fresh.Close()
	defer self.Close()
	freshPath := "/proc/self/fd/" + itoa(int(fresh.Fd()))
	_, freshID, err := Open(freshPath)
	if err != nil {
		t.Fatal(err)
	}
	_, selfID, err := Open("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name    string
		path    string
		want    ID
		wantErr error
	}{
		{"fresh namespace, any", freshPath, ID{}, nil},
		{"fresh namespace, recorded", freshPath, freshID, nil},
		{"recorded another namespace", freshPath, selfID, ErrChanged},
		{"not a namespace file", plain, ID{}, errAny},
		{"missing", plain + ".missing", ID{}, os.ErrNotExist},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			restore, id, err := Enter(c.path, c.want)
			if c.wantErr != nil {
				if err == nil || (c.wantErr != errAny && !errors.Is(err, c.wantErr)) {
					t.Fatalf("Enter(%s) = %v, want %v", c.path, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, in, err := Open("/proc/thread-self/ns/net")
			if err != nil {
				t.Fatal(err)
			}
			if in != freshID || id != freshID {
				t.Errorf("thread in %s (Enter said %s), want %s", in, id, freshID)
			}
			if err := restore(); err != nil {
				t.Fatal(err)
			}
			if _, back, _ := Open("/proc/self/ns/net"); back != selfID {
				t.Errorf("after restore the thread is in %s, want %s", back, selfID)
			}
		})
	}
}

var errAny = errors.New("any error")

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// BenchmarkEnterRestore: what create pays (exec pays the Enter half).
func BenchmarkEnterRestore(b *testing.B) {
	if os.Getuid() != 0 {
		b.Skip("setns(CLONE_NEWNET) needs root")
	}
	_, id, err := Open("/proc/self/ns/net")
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		restore, _, err := Enter("/proc/self/ns/net", id)
		if err != nil {
			b.Fatal(err)
		}
		if err := restore(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestOpen: only an nsfs file of a network namespace opens, and nothing
// at the path makes the open wait: a FIFO with no writer would hold an
// open(O_RDONLY) for ever.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		mention    string // "" : opens
	}{
		{"our network namespace", "/proc/self/ns/net", ""},
		{"a FIFO", fifo, "not a namespace file"},
		{"a regular file", plain, "not a namespace file"},
		{"a directory", dir, "not a namespace file"},
		{"a user namespace", "/proc/self/ns/user", "not a network namespace"},
		{"a mount namespace", "/proc/self/ns/mnt", "not a network namespace"},
		{"missing", plain + ".missing", "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			type result struct {
				f   *os.File
				err error
			}
			done := make(chan result, 1)
			go func() {
				f, _, err := Open(c.path)
				done <- result{f, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("Open(%s) still waits after 5 s", c.path)
			}
			if c.mention == "" {
				if r.err != nil {
					t.Fatal(r.err)
				}
				r.f.Close()
				return
			}
			if r.err == nil {
				r.f.Close()
				t.Fatalf("Open(%s) opened it, want an error mentioning %q", c.path, c.mention)
			}
			if !strings.Contains(r.err.Error(), c.mention) || !strings.Contains(r.err.Error(), c.path) {
				t.Errorf("Open(%s) = %v, want an error naming the path and mentioning %q", c.path, r.err, c.mention)
			}
		})
	}
}
