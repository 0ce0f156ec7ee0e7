package runc

import (
	"encoding/json"
	"os"
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
	// runc's own documents, as `runc features` printed them (the
	// constructor's tests read them too).
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
