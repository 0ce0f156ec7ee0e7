package admin

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runc-userns/runc-userns/internal/config"
	"github.com/runc-userns/runc-userns/pool"
)

func TestParseKernelVersion(t *testing.T) {
	cases := []struct {
		name    string
		release string
		want    kernelVersion
		wantErr bool
	}{
		{"debian", "6.1.0-18-amd64", kernelVersion{6, 1, 0}, false},
		{"ubuntu", "5.15.0-91-generic", kernelVersion{5, 15, 0}, false},
		{"vanilla three parts", "6.18.44", kernelVersion{6, 18, 44}, false},
		{"local suffix", "6.18.44-fc-v669", kernelVersion{6, 18, 44}, false},
		{"two parts", "5.12", kernelVersion{5, 12, 0}, false},
		{"rc", "6.3-rc1", kernelVersion{6, 3, 0}, false},
		{"plus", "4.19.0+", kernelVersion{4, 19, 0}, false},
		{"el", "4.18.0-513.el8.x86_64", kernelVersion{4, 18, 0}, false},
		{"empty", "", kernelVersion{}, true},
		{"one number", "6", kernelVersion{}, true},
		{"garbage", "linux-6.1", kernelVersion{}, true},
		{"overflow", "99999999999999999999.1", kernelVersion{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseKernelVersion(c.release)
			if (err != nil) != c.wantErr {
				t.Fatalf("parseKernelVersion(%q): err %v, want error %v", c.release, err, c.wantErr)
			}
			if got != c.want {
				t.Errorf("parseKernelVersion(%q) = %+v, want %+v", c.release, got, c.want)
			}
		})
	}
}

func TestKernelVersionAtLeast(t *testing.T) {
	cases := []struct {
		name         string
		v            kernelVersion
		major, minor int
		want         bool
	}{
		{"equal", kernelVersion{5, 12, 0}, 5, 12, true},
		{"patch does not matter", kernelVersion{5, 12, 99}, 5, 12, true},
		{"minor below", kernelVersion{5, 11, 99}, 5, 12, false},
		{"minor above", kernelVersion{5, 15, 0}, 5, 12, true},
		{"major above, minor below", kernelVersion{6, 1, 0}, 5, 12, true},
		{"major below, minor above", kernelVersion{4, 19, 0}, 5, 12, false},
		{"tmpfs: 6.2 is not enough", kernelVersion{6, 2, 16}, 6, 3, false},
		{"tmpfs: 6.3", kernelVersion{6, 3, 0}, 6, 3, true},
		{"two-digit minor compares as a number", kernelVersion{6, 18, 44}, 6, 3, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.v.atLeast(c.major, c.minor); got != c.want {
				t.Errorf("%+v.atLeast(%d, %d) = %v, want %v", c.v, c.major, c.minor, got, c.want)
			}
		})
	}
}

func TestKernelResult(t *testing.T) {
	cases := []struct {
		release string
		status  checkStatus
		detail  string
	}{
		{"6.1.0-18-amd64", statusOK, "not on tmpfs"},
		{"6.18.44", statusOK, "also on tmpfs"},
		{"5.19.0", statusOK, "idmapped mounts (>= 5.12)"},
		{"5.15.0-91-generic", statusWarn, "overlayfs takes no idmapped layers (>= 5.19)"},
		{"5.12.0", statusWarn, "idmapped mounts (>= 5.12), but overlayfs"},
		{"5.11.22", statusFail, "no idmapped mounts"},
		{"4.19.0-26-amd64", statusFail, "no idmapped mounts"},
		{"weird", statusWarn, "weird"},
	}
	for _, c := range cases {
		t.Run(c.release, func(t *testing.T) {
			r := kernelResult(c.release)
			if r.Status != c.status || !strings.Contains(r.Detail, c.detail) {
				t.Errorf("kernelResult(%q) = %+v, want status %s and detail containing %q", c.release, r, c.status, c.detail)
			}
			if r.Status == statusFail && r.Hint == "" {
				t.Errorf("kernelResult(%q): a fail without a hint", c.release)
			}
		})
	}
}

func TestMaxUserNamespacesResult(t *testing.T) {
	cases := []struct {
		name    string
		content string
		err     error
		status  checkStatus
	}{
		{"default", "63704\n", nil, statusOK},
		{"one", "1\n", nil, statusOK},
		{"zero", "0\n", nil, statusFail},
		{"missing", "", &fs.PathError{Op: "open", Path: maxUserNamespacesFile, Err: fs.ErrNotExist}, statusFail},
		{"unreadable", "", &fs.PathError{Op: "open", Path: maxUserNamespacesFile, Err: fs.ErrPermission}, statusFail},
		{"not a number", "lots\n", nil, statusWarn},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if r := maxUserNamespacesResult(c.content, c.err); r.Status != c.status {
				t.Errorf("maxUserNamespacesResult(%q, %v) = %+v, want %s", c.content, c.err, r, c.status)
			}
		})
	}
}

func TestPoolUsageResult(t *testing.T) {
	cases := []struct {
		name           string
		capacity, used int
		status         checkStatus
		detail         string
	}{
		{"empty", 64, 0, statusOK, "0 of 64 slots in use, 64 free"},
		{"some", 64, 3, statusOK, "3 of 64 slots in use, 61 free"},
		{"full", 64, 64, statusWarn, "64 of 64 slots in use, 0 free"},
		{"more records than slots", 2, 3, statusWarn, "0 free"},
		{"capacity unknown", -1, 2, statusOK, "2 ranges in use"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := poolUsageResult(c.capacity, c.used)
			if r.Status != c.status || !strings.Contains(r.Detail, c.detail) {
				t.Errorf("poolUsageResult(%d, %d) = %+v, want %s with %q", c.capacity, c.used, r, c.status, c.detail)
			}
		})
	}
}

func TestStraySlots(t *testing.T) {
	ranges := []pool.Range{{HostID: 1 << 31, Size: 4 * 65536}, {HostID: 3 << 30, Size: 65536}}
	alloc := func(owner string, host, size uint32) pool.Allocation {
		return pool.Allocation{Owner: owner, HostID: host, Size: size, Allocated: time.Unix(0, 0)}
	}
	cases := []struct {
		name   string
		allocs []pool.Allocation
		want   []string // substrings, one per message
	}{
		{"none", nil, nil},
		{"slots of both ranges", []pool.Allocation{alloc("a", 1<<31, 65536), alloc("b", 1<<31+3*65536, 65536), alloc("c", 3<<30, 65536)}, nil},
		{"off the slot grid", []pool.Allocation{alloc("a", 1<<31+1, 65536)}, []string{"owner a holds 2147483649+65536, not a slot"}},
		{"other slot size", []pool.Allocation{alloc("a", 1<<31, 1024)}, []string{"owner a"}},
		{"past the range's end", []pool.Allocation{alloc("a", 3<<30+65536, 65536)}, []string{"owner a"}},
		{"below every range", []pool.Allocation{alloc("a", 100000, 65536)}, []string{"owner a"}},
		{"shared slot", []pool.Allocation{alloc("a", 1<<31, 65536), alloc("b", 1<<31, 65536)}, []string{"owners a and b both hold"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := straySlots(ranges, 65536, c.allocs)
			if len(got) != len(c.want) {
				t.Fatalf("straySlots = %q, want %d messages", got, len(c.want))
			}
			for i := range got {
				if !strings.Contains(got[i], c.want[i]) {
					t.Errorf("message %d = %q, want it to contain %q", i, got[i], c.want[i])
				}
			}
		})
	}
}

// fakeDir is a FileInfo with only a mode.
type fakeDir fs.FileMode

func (f fakeDir) Name() string       { return "" }
func (f fakeDir) Size() int64        { return 0 }
func (f fakeDir) Mode() fs.FileMode  { return fs.ModeDir | fs.FileMode(f) }
func (f fakeDir) ModTime() time.Time { return time.Time{} }
func (f fakeDir) IsDir() bool        { return true }
func (f fakeDir) Sys() any           { return nil }

func TestUntraversable(t *testing.T) {
	cases := []struct {
		name     string
		dirs     map[string]fs.FileMode // missing: does not exist
		stateDir string
		wantDir  string
		wantErr  bool
	}{
		{"all searchable", map[string]fs.FileMode{"/": 0o755, "/run": 0o755}, "/run/runc-userns", "", false},
		{"state dir itself is not checked", map[string]fs.FileMode{"/": 0o755, "/run": 0o755, "/run/runc-userns": 0o700}, "/run/runc-userns", "", false},
		{"parent 0700", map[string]fs.FileMode{"/": 0o755, "/var": 0o755, "/var/lib": 0o700}, "/var/lib/runc-userns", "/var/lib", false},
		{"0711 is enough", map[string]fs.FileMode{"/": 0o755, "/srv": 0o711}, "/srv/state", "", false},
		{"0750 is not", map[string]fs.FileMode{"/": 0o755, "/srv": 0o750}, "/srv/state", "/srv", false},
		{"missing ancestors are created traversable", map[string]fs.FileMode{"/": 0o755}, "/a/b/c", "", false},
		{"above a missing one", map[string]fs.FileMode{"/": 0o755, "/a": 0o700}, "/a/b/c", "/a", false},
		{"the lowest bad one wins", map[string]fs.FileMode{"/": 0o700, "/a": 0o700}, "/a/b", "/a", false},
		{"root", map[string]fs.FileMode{"/": 0o700}, "/state", "/", false},
		{"unclean path", map[string]fs.FileMode{"/": 0o755, "/a": 0o700}, "/a/b/", "/a", false},
		{"stat error", nil, "/x/y", "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stat := func(p string) (fs.FileInfo, error) {
				if c.dirs == nil {
					return nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrPermission}
				}
				m, ok := c.dirs[p]
				if !ok {
					return nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
				}
				return fakeDir(m), nil
			}
			got, mode, err := untraversable(c.stateDir, stat)
			if (err != nil) != c.wantErr {
				t.Fatalf("untraversable(%q): err %v, want error %v", c.stateDir, err, c.wantErr)
			}
			if got != c.wantDir {
				t.Errorf("untraversable(%q) = %q, want %q", c.stateDir, got, c.wantDir)
			}
			if got != "" && mode != c.dirs[got] {
				t.Errorf("untraversable(%q): mode %#o, want %#o", c.stateDir, mode, c.dirs[got])
			}
		})
	}
}

func TestReportExitStatus(t *testing.T) {
	r := func(s ...checkStatus) []checkResult {
		var out []checkResult
		for i, st := range s {
			out = append(out, checkResult{Name: string(rune('a' + i)), Status: st})
		}
		return out
	}
	cases := []struct {
		name    string
		results []checkResult
		ok      bool
		failed  int
	}{
		{"nothing", nil, true, 0},
		{"all ok", r(statusOK, statusOK), true, 0},
		{"warns are allowed", r(statusOK, statusWarn, statusWarn), true, 0},
		{"one fail", r(statusOK, statusFail, statusWarn), false, 1},
		{"two fails", r(statusFail, statusFail), false, 2},
		{"an unknown status is not ok", r(statusOK, "skipped"), false, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := newReport(c.results)
			want := 0
			if !c.ok {
				want = 1
			}
			if rep.OK != c.ok || rep.exitStatus() != want || rep.failed() != c.failed {
				t.Errorf("report of %v: ok %v, exit %d, failed %d; want %v, %d, %d", c.results, rep.OK, rep.exitStatus(), rep.failed(), c.ok, want, c.failed)
			}
		})
	}
}

func TestReportJSON(t *testing.T) {
	cases := []struct {
		name    string
		results []checkResult
		want    string
	}{
		{"no checks is an empty array, not null", nil, `{"ok": true, "checks": []}`},
		{"every key, hint even when empty", []checkResult{
			{Name: "kernel", Status: statusOK, Detail: "6.1.0: idmapped mounts"},
			{Name: "path /proc", Status: statusFail, Detail: "proc: <no>", Hint: "use ext4 & co"},
		}, `{"ok": false, "checks": [
			{"name": "kernel", "status": "ok", "detail": "6.1.0: idmapped mounts", "hint": ""},
			{"name": "path /proc", "status": "fail", "detail": "proc: <no>", "hint": "use ext4 & co"}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := writeJSON(&buf, newReport(c.results)); err != nil {
				t.Fatal(err)
			}
			var got, want any
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, buf.String())
			}
			if err := json.Unmarshal([]byte(c.want), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("JSON:\n got %s\nwant %s", buf.String(), c.want)
			}
			if strings.Contains(buf.String(), `\u003c`) {
				t.Errorf("JSON escapes HTML characters: %s", buf.String())
			}
		})
	}
}

func TestWriteHuman(t *testing.T) {
	rep := newReport([]checkResult{
		{Name: "kernel", Status: statusOK, Detail: "6.18.44: idmapped mounts (>= 5.12)"},
		{Name: "state dir", Status: statusWarn, Detail: "/x on ext4", Hint: "use a tmpfs"},
		{Name: "path /proc", Status: statusFail, Detail: "proc: no", Hint: "use ext4"},
	})
	var buf bytes.Buffer
	if err := writeHuman(&buf, rep); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"ok    kernel      6.18.44: idmapped mounts (>= 5.12)\n" +
		"warn  state dir   /x on ext4\n" +
		"                  hint: use a tmpfs\n" +
		"FAIL  path /proc  proc: no\n" +
		"                  hint: use ext4\n"
	if buf.String() != want {
		t.Errorf("human output:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestRunChecks(t *testing.T) {
	var ran []string
	check := func(name string, needs need, st checkStatus, effect func(d *doctor)) doctorCheck {
		return doctorCheck{name, needs, func(d *doctor) checkResult {
			ran = append(ran, name)
			if effect != nil {
				effect(d)
			}
			return checkResult{Name: "ignored: the runner names results", Status: st, Detail: name}
		}}
	}
	cases := []struct {
		name   string
		checks []doctorCheck
		want   []string
	}{
		{"independent checks all run, in order", []doctorCheck{check("a", 0, statusOK, nil), check("b", 0, statusFail, nil)}, []string{"a", "b"}},
		{"no config: checks that need it are left out", []doctorCheck{
			check("config", 0, statusFail, nil), check("pool", needConfig, statusOK, nil), check("path", 0, statusOK, nil),
		}, []string{"config", "path"}},
		{"config then runtime", []doctorCheck{
			check("config", 0, statusOK, func(d *doctor) { d.cfg = &config.Config{} }),
			check("runtime", needConfig, statusFail, nil),
			check("runtime idmap", needConfig|needRuntime, statusOK, nil),
			check("kernel idmap", needConfig, statusOK, nil),
		}, []string{"config", "runtime", "kernel idmap"}},
		{"runtime found", []doctorCheck{
			check("config", 0, statusOK, func(d *doctor) { d.cfg = &config.Config{} }),
			check("runtime", needConfig, statusOK, func(d *doctor) { d.runtime = "/usr/sbin/runc" }),
			check("runtime idmap", needConfig|needRuntime, statusOK, nil),
		}, []string{"config", "runtime", "runtime idmap"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ran = nil
			got := runChecks(&doctor{capacity: -1}, c.checks)
			if !reflect.DeepEqual(ran, c.want) {
				t.Errorf("ran %q, want %q", ran, c.want)
			}
			var names []string
			for _, r := range got {
				if r.Name != r.Detail {
					t.Errorf("result of %s named %q", r.Detail, r.Name)
				}
				names = append(names, r.Name)
			}
			if !reflect.DeepEqual(names, c.want) {
				t.Errorf("results %q, want %q", names, c.want)
			}
		})
	}
}

func TestDoctorChecksNamed(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range doctorChecks {
		if c.name == "" || seen[c.name] || c.run == nil {
			t.Errorf("check %q: want a unique name and a function", c.name)
		}
		seen[c.name] = true
	}
	for i, c := range pathChecks([]string{"/a", "/b c"}) {
		if want := []string{"path /a", "path /b c"}[i]; c.name != want {
			t.Errorf("path check %d named %q, want %q", i, c.name, want)
		}
	}
}

func TestExistingAncestor(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ path, want string }{
		{dir, dir},
		{dir + "/missing/deeper", dir},
		{dir + "/missing/", dir},
		{"/", "/"},
	}
	for _, c := range cases {
		if got := existingAncestor(c.path); got != c.want {
			t.Errorf("existingAncestor(%q) = %q, want %q", c.path, got, c.want)
		}
	}
	if err := os.Symlink("/nonexistent-target", dir+"/dangling"); err != nil {
		t.Fatal(err)
	}
	if got := existingAncestor(dir + "/dangling/x"); got != dir {
		t.Errorf("a dangling symlink: existingAncestor = %q, want %q (the link leads nowhere)", got, dir)
	}
}
