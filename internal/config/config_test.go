package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/runc-userns/runc-userns/pool"
)

// defaults is what an empty configuration means.
func defaults() Config {
	return Config{
		StateDir: DefaultStateDir,
		Userns:   Userns{Mode: ModeAnnotation, SubidUser: DefaultSubidUser, SlotSize: DefaultSlotSize},
	}
}

const fullExample = `{"runtime": "/usr/sbin/runc", "stateDir": "/run/runc-userns", "userns": {"mode": "annotation", "subidUser": "runc-userns", "ranges": [{"hostID": 2147483648, "size": 67108864}], "slotSize": 65536}}`

func TestParse(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		want Config
	}{
		{"empty object", `{}`, defaults()},
		{"blanks around", " \n\t{ }\n\n", defaults()},
		{"empty userns", `{"userns": {}}`, defaults()},
		{"full example", fullExample, Config{
			Runtime:  "/usr/sbin/runc",
			StateDir: "/run/runc-userns",
			Userns: Userns{
				Mode:      ModeAnnotation,
				SubidUser: "runc-userns",
				Ranges:    []pool.Range{{HostID: 2147483648, Size: 67108864}},
				SlotSize:  65536,
			},
		}},
		{"mode always", `{"userns": {"mode": "always"}}`, func() Config {
			c := defaults()
			c.Userns.Mode = ModeAlways
			return c
		}()},
		{"mode off", `{"userns": {"mode": "off"}}`, func() Config {
			c := defaults()
			c.Userns.Mode = ModeOff
			return c
		}()},
		{"several ranges, largest IDs", `{"userns": {"ranges": [{"hostID": 100000, "size": 65536}, {"hostID": 4294901760, "size": 65535}], "slotSize": 1024}}`, func() Config {
			c := defaults()
			c.Userns.Ranges = []pool.Range{{HostID: 100000, Size: 65536}, {HostID: 4294901760, Size: 65535}}
			c.Userns.SlotSize = 1024
			return c
		}()},
		{"state dir in another spelling: cleaned", `{"stateDir": "/run//a/../runc-userns/"}`, func() Config {
			c := defaults()
			c.StateDir = "/run/runc-userns"
			return c
		}()},
		{"other state dir and subid user", `{"stateDir": "/var/lib/x", "userns": {"subidUser": "containers"}}`, func() Config {
			c := defaults()
			c.StateDir = "/var/lib/x"
			c.Userns.SubidUser = "containers"
			return c
		}()},
		{"explicit zero slot size means the default", `{"userns": {"slotSize": 0}}`, defaults()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse([]byte(c.raw))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(*got, c.want) {
				t.Errorf("Parse:\n got %+v\nwant %+v", *got, c.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name    string
		raw     string
		mention []string
	}{
		{"unknown top-level key", `{"runtim": "/usr/sbin/runc"}`, []string{`"runtim"`}},
		{"unknown nested key", `{"userns": {"mod": "always"}}`, []string{`"mod"`}},
		{"unknown key in a range", `{"userns": {"ranges": [{"hostID": 1, "size": 2, "count": 3}]}}`, []string{`"count"`}},
		{"bad mode", `{"userns": {"mode": "sometimes"}}`, []string{"userns.mode", `"sometimes"`, `"annotation"`, `"always"`, `"off"`}},
		{"mode in the wrong case", `{"userns": {"mode": "Always"}}`, []string{"userns.mode", `"Always"`}},
		{"relative stateDir", `{"stateDir": "run/runc-userns"}`, []string{"stateDir", `"run/runc-userns"`, "absolute"}},
		{"relative runtime", `{"runtime": "runc"}`, []string{"runtime", `"runc"`, "absolute"}},
		{"dot runtime", `{"runtime": "./runc"}`, []string{"runtime", `"./runc"`}},
		{"trailing object", `{} {}`, []string{"trailing data"}},
		{"trailing garbage", `{"runtime": "/r"}x`, []string{"trailing data"}},
		{"trailing array", "{}\n[]", []string{"trailing data"}},
		{"empty", ``, []string{"EOF"}},
		{"not an object", `[]`, []string{"array"}},
		{"truncated", `{"userns": {`, []string{"EOF"}},
		{"hostID overflow", `{"userns": {"ranges": [{"hostID": 4294967296, "size": 1}]}}`, []string{"4294967296"}},
		{"negative size", `{"userns": {"ranges": [{"hostID": 1, "size": -1}]}}`, []string{"-1"}},
		{"slot size as a string", `{"userns": {"slotSize": "64k"}}`, []string{"slotSize", "string"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse([]byte(c.raw))
			if err == nil {
				t.Fatalf("Parse = %+v, want an error", got)
			}
			for _, s := range c.mention {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %s", err, s)
				}
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, contents string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(contents), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", fullExample)
	bad := write("bad.json", `{"userns": {"mode": "sometimes"}}`)
	missing := filepath.Join(dir, "missing.json")
	huge := write("huge.json", `{"runtime": "/usr/sbin/runc"`+strings.Repeat(" ", MaxSize)+`}`)
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		env     string
		want    *Config
		is      error
		mention []string
	}{
		{
			name: "from the environment",
			env:  good,
			want: &Config{
				Runtime: "/usr/sbin/runc", StateDir: "/run/runc-userns", Path: good,
				Userns: Userns{Mode: ModeAnnotation, SubidUser: "runc-userns", Ranges: []pool.Range{{HostID: 2147483648, Size: 67108864}}, SlotSize: 65536},
			},
		},
		{
			name:    "named by the environment but missing",
			env:     missing,
			is:      os.ErrNotExist,
			mention: []string{missing, EnvPath},
		},
		{
			name:    "named by the environment but a directory",
			env:     dir,
			mention: []string{dir, EnvPath},
		},
		{
			name:    "a FIFO: refused, not waited on",
			env:     fifo,
			mention: []string{fifo, "not a regular file"},
		},
		{
			name:    "larger than a config file gets",
			env:     huge,
			mention: []string{huge, "more than the 65536 this runtime reads"},
		},
		{
			name:    "invalid",
			env:     bad,
			mention: []string{bad, `"sometimes"`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var asked []string
			getenv := func(k string) string {
				asked = append(asked, k)
				if k == EnvPath {
					return c.env
				}
				return ""
			}
			got, err := Load(getenv)
			if !reflect.DeepEqual(asked, []string{EnvPath}) {
				t.Errorf("Load read the environment variables %q, want only %s", asked, EnvPath)
			}
			if c.want != nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if !reflect.DeepEqual(got, c.want) {
					t.Errorf("Load:\n got %+v\nwant %+v", got, c.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Load = %+v, want an error", got)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %q does not wrap %v", err, c.is)
			}
			for _, s := range c.mention {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %s", err, s)
				}
			}
		})
	}
}

// FuzzParse: Parse never panics, and what it accepts is valid and
// survives a round trip through JSON.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		fullExample,
		`{}`,
		`null`,
		`{"userns": {"mode": "off", "ranges": []}}`,
		`{"runtime": "runc"}`,
		`{"stateDir": ""}`,
		`{} {}`,
		`{"userns": {"slotSize": 4294967295}}`,
		`{"RUNTIME": "/x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := Parse(raw)
		if err != nil {
			return
		}
		switch c.Userns.Mode {
		case ModeAnnotation, ModeAlways, ModeOff:
		default:
			t.Fatalf("accepted mode %q", c.Userns.Mode)
		}
		if !filepath.IsAbs(c.StateDir) {
			t.Fatalf("accepted stateDir %q", c.StateDir)
		}
		if c.Runtime != "" && !filepath.IsAbs(c.Runtime) {
			t.Fatalf("accepted runtime %q", c.Runtime)
		}
		if c.Userns.SubidUser == "" || c.Userns.SlotSize == 0 {
			t.Fatalf("defaults not applied: %+v", c)
		}
		if c.Path != "" {
			t.Fatalf("Parse set Path %q", c.Path)
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(%s): %v", out, err)
		}
		if len(c.Userns.Ranges) == 0 {
			c.Userns.Ranges = nil // [] and absent mean the same
		}
		if !reflect.DeepEqual(again, c) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", again, c)
		}
	})
}

// A file that reads but does not check out: Load's error comes with its
// runtime and stateDir alone, or with nil when even those are unusable.
func TestLoadLenient(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name    string
		raw     string
		want    *Config // nil: an error
		wantErr string
	}{
		{"an unknown key and a bad mode", `{"runtime": "/opt/runc", "stateDir": "/s/", "bogusKey": 1, "userns": {"mode": "sometimes"}}`,
			func() *Config { c := defaults(); c.Runtime, c.StateDir = "/opt/runc", "/s"; return &c }(), ""},
		{"nothing of either: the defaults", `{"x": 1}`, func() *Config { c := defaults(); return &c }(), ""},
		{"not JSON", `{"runtime": `, nil, "unexpected EOF"},
		{"runtime of the wrong type", `{"runtime": 1}`, nil, "cannot unmarshal"},
		{"relative runtime", `{"runtime": "runc"}`, nil, "absolute"},
		{"relative stateDir", `{"stateDir": "s"}`, nil, "absolute"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, fmt.Sprint(i))
			if err := os.WriteFile(p, []byte(c.raw), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := Load(func(k string) string {
				if k == EnvPath {
					return p
				}
				return ""
			})
			if c.want == nil {
				if got != nil || err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Load = %+v, %v; want nil and an error mentioning %q", got, err, c.wantErr)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), p) {
				t.Fatalf("Load: error %v, want one naming %s", err, p)
			}
			c.want.Path = p
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Load = %+v, want %+v", got, c.want)
			}
		})
	}
}
