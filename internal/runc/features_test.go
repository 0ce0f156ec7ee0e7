package runc

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseFeatures(t *testing.T) {
	cases := []struct {
		name          string
		raw           string
		native, first bool
		version       string
		inside        bool // StdioChownedInside
	}{
		{"runc 1.1 (no mountExtensions)", `{"annotations":{"org.opencontainers.runc.version":"1.1.5+ds1"},"linux":{"namespaces":["user"]}}`, false, true, "1.1.5+ds1", true},
		{"runc 1.2 native idmap, old join order", `{"annotations":{"org.opencontainers.runc.version":"1.2.6"},"linux":{"mountExtensions":{"idmap":{"enabled":true}}}}`, true, true, "1.2.6", true},
		{"runc 1.3 rc", `{"annotations":{"org.opencontainers.runc.version":"1.3.0-rc.1"},"linux":{"mountExtensions":{"idmap":{"enabled":true}}}}`, true, false, "1.3.0-rc.1", true},
		{"runc 1.5", `{"annotations":{"org.opencontainers.runc.version":"1.5.2"},"linux":{"mountExtensions":{"idmap":{"enabled":true}}}}`, true, false, "1.5.2", true},
		{"idmap disabled", `{"linux":{"mountExtensions":{"idmap":{"enabled":false}}}}`, false, false, "", false},
		{"not runc (crun)", `{"annotations":{"io.github.containers.crun.version":"1.8.1"},"linux":{"mountExtensions":{"idmap":{"enabled":true}}}}`, true, false, "", false},
		{"garbage version", `{"annotations":{"org.opencontainers.runc.version":"x"}}`, false, false, "x", true},
		{"empty document", `{}`, false, false, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := ParseFeatures([]byte(c.raw))
			if err != nil {
				t.Fatal(err)
			}
			if f.NativeIdmap != c.native || f.JoinsUsernsFirst != c.first || f.Version != c.version || f.StdioChownedInside != c.inside {
				t.Errorf("got native=%v first=%v version=%q inside=%v, want %v %v %q %v", f.NativeIdmap, f.JoinsUsernsFirst, f.Version, f.StdioChownedInside, c.native, c.first, c.version, c.inside)
			}
		})
	}
	// runc's own documents, as `runc features` printed them.
	for _, c := range []struct {
		file, version string
		native, first bool
	}{
		{"testdata/features-runc-1.1.5.json", "1.1.5+ds1", false, true},
		{"testdata/features-runc-1.5.2.json", "1.5.2", true, false},
	} {
		raw, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ParseFeatures(raw)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if f.Version != c.version || f.NativeIdmap != c.native || f.JoinsUsernsFirst != c.first || !f.StdioChownedInside {
			t.Errorf("%s: version %q native %v first %v inside %v; want %q %v %v true", c.file, f.Version, f.NativeIdmap, f.JoinsUsernsFirst, f.StdioChownedInside, c.version, c.native, c.first)
		}
	}
	if _, err := ParseFeatures([]byte("{")); err == nil {
		t.Error("truncated document parsed")
	}
}

func TestAmendFeatures(t *testing.T) {
	cases := []struct {
		name  string
		raw   string
		idmap bool
	}{
		{"runc 1.1: adds the extension", `{"ociVersionMax":"1.0.2-dev","linux":{"namespaces":["ipc","user"]},"annotations":{"a":"b"}}`, true},
		{"no user namespace listed", `{"linux":{"namespaces":["ipc"]}}`, true},
		{"no linux section", `{"x-unknown":{"n":18446744073709551615}}`, false},
		{"native runtime, kernel cannot", `{"linux":{"namespaces":["user"],"mountExtensions":{"idmap":{"enabled":true}}}}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := AmendFeatures([]byte(c.raw), c.idmap)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Linux struct {
					Namespaces      []string `json:"namespaces"`
					MountExtensions struct {
						IDMap struct {
							Enabled *bool `json:"enabled"`
						} `json:"idmap"`
					} `json:"mountExtensions"`
				} `json:"linux"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			users := 0
			for _, n := range got.Linux.Namespaces {
				if n == "user" {
					users++
				}
			}
			if users != 1 {
				t.Errorf("namespaces %v: want exactly one user", got.Linux.Namespaces)
			}
			if e := got.Linux.MountExtensions.IDMap.Enabled; e == nil || *e != c.idmap {
				t.Errorf("idmap.enabled = %v, want %v", e, c.idmap)
			}
			var before, after map[string]any
			_ = json.Unmarshal([]byte(c.raw), &before)
			_ = json.Unmarshal(out, &after)
			for k := range before {
				if _, ok := after[k]; !ok {
					t.Errorf("field %q lost", k)
				}
			}
		})
	}
}

func TestSummary(t *testing.T) {
	for _, f := range []Features{
		{},
		{NativeIdmap: true, StdioChownedInside: true, Version: "1.2.0"},
		{JoinsUsernsFirst: true, StdioChownedInside: true, Version: "1.1.5+ds1"},
		{Version: "a version with spaces"},
	} {
		t.Run(fmt.Sprintf("%+v", f), func(t *testing.T) {
			b, ok := f.summary()
			if !ok {
				t.Fatal("no summary")
			}
			got, ok := parseSummary(b)
			if !ok {
				t.Fatalf("parseSummary(%q) refused its own summary", b)
			}
			if !reflect.DeepEqual(*got, f) {
				t.Errorf("round trip: %+v, want %+v", *got, f)
			}
		})
	}
	for _, v := range []string{"1.1\n5", "1.1\r"} {
		if b, ok := (&Features{Version: v}).summary(); ok {
			t.Errorf("version %q: summary %q, want none", v, b)
		}
	}
}

func TestParseSummary(t *testing.T) {
	good := "runc-userns features summary 1\nnativeIdmap false\njoinsUsernsFirst true\nstdioChownedInside true\nversion 1.1.5\n"
	if f, ok := parseSummary([]byte(good)); !ok || f.NativeIdmap || !f.JoinsUsernsFirst || !f.StdioChownedInside || f.Version != "1.1.5" {
		t.Fatalf("parseSummary(good) = %+v, %v", f, ok)
	}
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"other header", strings.Replace(good, "summary 1", "summary 2", 1)},
		{"no final newline", strings.TrimSuffix(good, "\n")},
		{"a line more", good + "extra\n"},
		{"a line less", strings.Replace(good, "nativeIdmap false\n", "", 1)},
		{"fields reordered", strings.Replace(strings.Replace(good, "nativeIdmap false", "X", 1), "joinsUsernsFirst true", "nativeIdmap false", 1)},
		{"not a bool", strings.Replace(good, "nativeIdmap false", "nativeIdmap no", 1)},
		{"two spaces", strings.Replace(good, "nativeIdmap false", "nativeIdmap  false", 1)},
		{"no version key", strings.Replace(good, "version 1.1.5", "1.1.5", 1)},
		{"carriage return", strings.Replace(good, "version 1.1.5", "version 1.1.5\r", 1)},
		{"JSON", `{"nativeIdmap":false}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if f, ok := parseSummary([]byte(tc.in)); ok {
				t.Errorf("parseSummary(%q) = %+v, want refused", tc.in, f)
			}
		})
	}
}

// ProbeSummary runs the runtime once, then answers from the summary it
// left beside the cached document; a summary it cannot read sends it back
// to the document (not to the runtime), and is written again.
func TestProbeSummary(t *testing.T) {
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	runtime := filepath.Join(dir, "runc")
	doc := `{"ociVersionMin":"1.0.0","linux":{"mountExtensions":{"idmap":{"enabled":true}}},"annotations":{"org.opencontainers.runc.version":"1.2.0"}}`
	script := "#!/bin/sh\necho x >> " + calls + "\n[ \"$1\" = features ] && echo '" + doc + "'\n"
	if err := os.WriteFile(runtime, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(dir, "state")
	want := Features{NativeIdmap: true, JoinsUsernsFirst: true, StdioChownedInside: true, Version: "1.2.0"}
	probed := func(step string) {
		t.Helper()
		f, err := ProbeSummary(runtime, cacheDir)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		f.Raw = nil
		if !reflect.DeepEqual(*f, want) {
			t.Fatalf("%s: %+v, want %+v", step, *f, want)
		}
		if b, _ := os.ReadFile(calls); len(b) != 2 {
			t.Fatalf("%s: the runtime ran %d times, want once", step, len(b)/2)
		}
	}
	probed("first call")
	cache, err := featuresCacheOf(runtime, cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(summaryPath(cache))
	if err != nil {
		t.Fatalf("no summary beside the cached document: %v", err)
	}
	probed("from the summary")
	// Answered from the summary alone: the document is not read.
	if err := os.WriteFile(cache, []byte("not JSON"), 0o644); err != nil {
		t.Fatal(err)
	}
	probed("document spoilt")
	if err := os.WriteFile(cache, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(summaryPath(cache), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	probed("summary spoilt")
	if got, _ := os.ReadFile(summaryPath(cache)); string(got) != string(sum) {
		t.Errorf("summary not written again: %q, want %q", got, sum)
	}
	// A runtime without `features` is not cached, nor summarised.
	if err := os.WriteFile(runtime, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "state2")
	f, err := ProbeSummary(runtime, other)
	if err != nil || f.NativeIdmap || f.StdioChownedInside {
		t.Fatalf("runtime without features: %+v, %v", f, err)
	}
	if entries, _ := os.ReadDir(other); len(entries) != 0 {
		t.Errorf("a guess was cached: %v", entries)
	}
}

// Whatever parseSummary accepts is exactly what summary writes for it: one
// spelling per value, so a summary never reads differently from how it
// was written.
func FuzzParseSummary(f *testing.F) {
	f.Add([]byte("runc-userns features summary 1\nnativeIdmap false\njoinsUsernsFirst true\nstdioChownedInside true\nversion 1.1.5\n"))
	f.Add([]byte("runc-userns features summary 1\nnativeIdmap true\njoinsUsernsFirst false\nstdioChownedInside false\nversion \n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := parseSummary(b)
		if !ok {
			return
		}
		again, ok := got.summary()
		if !ok || string(again) != string(b) {
			t.Fatalf("parseSummary(%q) = %+v, which writes %q", b, got, again)
		}
	})
}
