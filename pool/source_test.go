package pool

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fakeGetsubids writes a getsubids stand-in that prints uidOut for
// "getsubids USER" and gidOut for "getsubids -g USER"; an output starting
// with "FAIL" makes it print the rest to stderr and exit 1.
func fakeGetsubids(t *testing.T, uidOut, gidOut string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "uid.out", uidOut)
	writeFile(t, dir, "gid.out", gidOut)
	script := `#!/bin/sh
out="` + dir + `/uid.out"
[ "$1" = "-g" ] && out="` + dir + `/gid.out"
if grep -q '^FAIL' "$out"; then sed 's/^FAIL//' "$out" >&2; exit 1; fi
if grep -q '^SLEEP' "$out"; then exec sleep 5; fi
cat "$out"
`
	path := filepath.Join(dir, "getsubids")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestResolveRanges(t *testing.T) {
	dir := t.TempDir()
	passwd := writeFile(t, dir, "passwd", "runc-userns:x:999:999::/:/usr/sbin/nologin\n")
	files := func(subuid, subgid string) SourceEnv {
		d := t.TempDir()
		return SourceEnv{Passwd: passwd, Subuid: writeFile(t, d, "subuid", subuid), Subgid: writeFile(t, d, "subgid", subgid)}
	}
	withGetsubids := func(uidOut, gidOut string) SourceEnv {
		env := files("runc-userns:1:65536\n", "runc-userns:1:65536\n") // must be ignored
		env.Getsubids = fakeGetsubids(t, uidOut, gidOut)
		return env
	}
	explicit := []Range{{HostID: 3 << 30, Size: 65536}}
	r100k := []Range{{100000, 65536}}
	tests := []struct {
		name     string
		explicit []Range
		user     string
		env      SourceEnv
		want     []Range
		wantSrc  string // substring
		wantErr  string // substring
	}{
		{name: "explicit wins", explicit: explicit, user: "runc-userns", env: files("runc-userns:100000:65536", "runc-userns:100000:65536"), want: explicit, wantSrc: "the configured ranges"},
		{name: "subid files", user: "runc-userns", env: files("alice:1:2\nrunc-userns:100000:65536\n", "runc-userns:100000:65536\n"), want: r100k, wantSrc: "the subordinate IDs of runc-userns"},
		{name: "subid files by uid", user: "runc-userns", env: files("999:100000:65536\n", "runc-userns:100000:65536\n"), want: r100k},
		{name: "several ranges sorted", user: "runc-userns", env: files("runc-userns:300000:65536\nrunc-userns:100000:65536\n", "runc-userns:100000:65536\nrunc-userns:300000:65536\n"), want: []Range{{100000, 65536}, {300000, 65536}}},
		{name: "no entry: default", user: "runc-userns", env: files("alice:100000:65536\n", ""), want: DefaultRanges(), wantSrc: "the default range 2147483648+67108864"},
		{name: "missing files: default", user: "runc-userns", env: SourceEnv{Passwd: passwd, Subuid: filepath.Join(dir, "no"), Subgid: filepath.Join(dir, "no")}, want: DefaultRanges()},
		{name: "no subid user: default", env: files("runc-userns:100000:65536", "runc-userns:100000:65536"), want: DefaultRanges()},
		{name: "uid and gid differ", user: "runc-userns", env: files("runc-userns:100000:65536\n", "runc-userns:200000:65536\n"),
			wantErr: "differ: uids 100000+65536, gids 200000+65536"},
		{name: "gids missing", user: "runc-userns", env: files("runc-userns:100000:65536\n", ""), wantErr: "uids 100000+65536, gids none"},
		{name: "own broken line", user: "runc-userns", env: files("runc-userns:abc:65536\n", ""), wantErr: `start "abc" is not a number`},
		{name: "other's broken line ignored", user: "runc-userns", env: files("alice:abc\nrunc-userns:100000:65536\n", "runc-userns:100000:65536\n"), want: r100k},
		{name: "user like a flag", user: "-g", env: files("", ""), wantErr: `subid user "-g": not a user name`},
		{name: "getsubids", user: "runc-userns", env: withGetsubids("0: runc-userns 100000 65536\n", "0: runc-userns 100000 65536\n"), want: r100k, wantSrc: "(getsubids)"},
		{name: "getsubids no ranges: default", user: "runc-userns", env: withGetsubids("FAILError fetching ranges\n", "FAILError fetching ranges\n"), want: DefaultRanges()},
		{name: "getsubids differ", user: "runc-userns", env: withGetsubids("0: runc-userns 100000 65536\n", "0: runc-userns 165536 65536\n"), wantErr: "uids 100000+65536, gids 165536+65536"},
		{name: "getsubids other failure", user: "runc-userns", env: withGetsubids("FAILsubid_init: no such file\n", ""), wantErr: "subid_init: no such file"},
		{name: "getsubids garbage", user: "runc-userns", env: withGetsubids("hello world\n", ""), wantErr: "unexpected output"},
		{name: "getsubids other owner", user: "runc-userns", env: withGetsubids("0: alice 100000 65536\n", ""), wantErr: `a range of "alice"`},
		{name: "getsubids missing binary", user: "runc-userns", env: SourceEnv{Getsubids: filepath.Join(dir, "nope")}, wantErr: "nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, src, err := ResolveRanges(tc.explicit, tc.user, tc.env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ranges = %v, want %v", got, tc.want)
			}
			if !strings.Contains(src, tc.wantSrc) {
				t.Errorf("source = %q, want it to contain %q", src, tc.wantSrc)
			}
		})
	}
}

func TestResolveRangesMismatchIsInvalidConfig(t *testing.T) {
	d := t.TempDir()
	env := SourceEnv{Subuid: writeFile(t, d, "subuid", "u:100000:65536\n"), Subgid: writeFile(t, d, "subgid", "u:200000:65536\n")}
	_, _, err := ResolveRanges(nil, "u", env)
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err = %v, want ErrInvalidConfig", err)
	}
}

func TestResolveRangesGetsubidsTimeout(t *testing.T) {
	env := SourceEnv{Getsubids: fakeGetsubids(t, "SLEEP\n", ""), Timeout: 100 * time.Millisecond}
	start := time.Now()
	_, _, err := ResolveRanges(nil, "u", env)
	if err == nil || !strings.Contains(err.Error(), "no answer in 100ms") {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("took %v: the timeout did not stop getsubids", d)
	}
}

func TestFindExecutable(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "bin", "getsubids")
	notExe := filepath.Join(dir, "noexec", "getsubids")
	for _, p := range []string{exe, notExe} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Dir(exe), "getsubids", "#!/bin/sh\n")
	os.Chmod(exe, 0o755)
	writeFile(t, filepath.Dir(notExe), "getsubids", "")
	tests := []struct {
		name       string
		candidates []string
		path       string
		want       string
	}{
		{name: "candidate first", candidates: []string{exe}, path: "/nonexistent", want: exe},
		{name: "missing candidate, PATH", candidates: []string{filepath.Join(dir, "none")}, path: filepath.Join(dir, "noexec") + ":" + filepath.Join(dir, "bin"), want: exe},
		{name: "empty PATH", candidates: []string{filepath.Join(dir, "none")}, path: "", want: ""},
		{name: "relative PATH entries skipped", path: ".:bin:", want: ""},
		{name: "not executable", candidates: []string{notExe}, want: ""},
		{name: "directory", candidates: []string{dir}, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "relative PATH entries skipped" {
				t.Chdir(dir) // ./bin/getsubids exists: it must not be found
			}
			if got := findExecutable(tc.candidates, "getsubids", tc.path); got != tc.want {
				t.Errorf("findExecutable = %q, want %q", got, tc.want)
			}
		})
	}
}
