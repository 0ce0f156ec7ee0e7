package runc

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/runc-userns/runc-userns/internal/oci"
)

// Features is what the wrapper needs to know of the real runtime, read
// from its `features` output (runtime-spec features.json).
type Features struct {
	// NativeIdmap: the runtime applies MOUNT_ATTR_IDMAP itself for mounts
	// with uidMappings/gidMappings (runc >= 1.2, crun). Such a runtime also
	// reads a joined user namespace's mappings itself, and warns when given
	// both a path and mappings.
	NativeIdmap bool `json:"nativeIdmap"`
	// JoinsUsernsFirst: the runtime joins a user namespace given by path
	// before the other namespaces given by path (runc < 1.3), so it cannot
	// join a namespace the joined user namespace does not own.
	JoinsUsernsFirst bool `json:"joinsUsernsFirst"`
	// StdioChownedInside: the runtime is runc (>= 1.1, which has
	// `features`). Its init chowns the container's stdio to the
	// container's user from inside the container's user namespace, skips
	// /dev/null, and ignores EPERM (libcontainer's fixStdioPermissions):
	// a host device node owned by an ID the user namespace does not map
	// (host root, a system group: the pool maps none of them) stays as it
	// is. crun 1.8.1 chowns it from the host side.
	StdioChownedInside bool `json:"stdioChownedInside"`
	// Version is the runtime's version from its features annotations.
	Version string `json:"version"`
	// Raw is the runtime's own features document.
	Raw json.RawMessage `json:"raw"`
}

type featuresDoc struct {
	Annotations map[string]string `json:"annotations"`
	Linux       *struct {
		MountExtensions *struct {
			IDMap *struct {
				Enabled *bool `json:"enabled"`
			} `json:"idmap"`
		} `json:"mountExtensions"`
	} `json:"linux"`
}

// ParseFeatures reads a runtime's `features` output. runc 1.1 prints a
// document without mountExtensions; a runtime without `features` at all is
// treated the same (no native idmap).
func ParseFeatures(raw []byte) (*Features, error) {
	var d featuresDoc
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("parse runtime features: %w", err)
	}
	f := &Features{Raw: append(json.RawMessage(nil), raw...)}
	if v, ok := d.Annotations["org.opencontainers.runc.version"]; ok {
		f.Version, f.StdioChownedInside = v, true
		major, minor, ok := parseVersion(v)
		f.JoinsUsernsFirst = ok && (major < 1 || major == 1 && minor < 3)
	}
	if d.Linux != nil && d.Linux.MountExtensions != nil && d.Linux.MountExtensions.IDMap != nil &&
		d.Linux.MountExtensions.IDMap.Enabled != nil {
		f.NativeIdmap = *d.Linux.MountExtensions.IDMap.Enabled
	}
	return f, nil
}

// ProbeFeatures returns the runtime's features, from a cache under
// cacheDir keyed by the runtime binary's path, inode, size and mtime (an
// upgraded runc is probed again), else by running `runtime features`.
func ProbeFeatures(runtime, cacheDir string) (*Features, error) {
	cache, err := featuresCacheOf(runtime, cacheDir)
	if err != nil {
		return nil, err
	}
	f, _, err := probe(runtime, cache)
	return f, err
}

// ProbeSummary is ProbeFeatures without Raw, for a create: it reads the
// one-line-per-field summary (summaryPath) that it writes beside the
// cached document, rather than decoding runc's whole document, which cost
// a fresh process ~0.12 ms (the twenty-third round of bench/README at cc12767). Without a
// summary, or with one it cannot read, it is ProbeFeatures, and leaves a
// summary behind when the document is cached.
func ProbeSummary(runtime, cacheDir string) (*Features, error) {
	cache, err := featuresCacheOf(runtime, cacheDir)
	if err != nil {
		return nil, err
	}
	sum := summaryPath(cache)
	if b, err := os.ReadFile(sum); err == nil {
		if f, ok := parseSummary(b); ok {
			return f, nil
		}
	}
	f, cached, err := probe(runtime, cache)
	if err == nil && cached {
		if b, ok := f.summary(); ok {
			writeCache(sum, b)
		}
	}
	return f, err
}

func featuresCacheOf(runtime, cacheDir string) (string, error) {
	st, err := os.Stat(runtime)
	if err != nil {
		return "", err
	}
	return FeaturesCache(cacheDir, runtime, inode(st), st.Size(), st.ModTime().UnixNano()), nil
}

// probe reads the runtime's features from cache, else runs `runtime
// features` and caches its output. cached: f is the runtime's own
// document, now in cache.
func probe(runtime, cache string) (f *Features, cached bool, err error) {
	if raw, err := os.ReadFile(cache); err == nil {
		if f, err := ParseFeatures(raw); err == nil {
			return f, true, nil
		}
	}
	out, err := exec.Command(runtime, "features").Output()
	if err != nil {
		// A runtime without `features` (runc < 1.1), or one that failed
		// this time: assume nothing native, and do not cache the guess.
		f, err := ParseFeatures([]byte("{}"))
		return f, false, err
	}
	if f, err = ParseFeatures(out); err != nil {
		return nil, false, fmt.Errorf("%s features: %w", runtime, err)
	}
	return f, writeCache(cache, out), nil
}

// writeCache replaces path with data (oci.ReplaceFile: a reader sees the
// old file or the new one), best effort.
func writeCache(path string, data []byte) bool {
	return os.MkdirAll(filepath.Dir(path), 0o711) == nil && oci.ReplaceFile(path, data, 0o600) == nil
}

// summaryPath is the summary of the features cached at cache:
// features-<hash>.sum beside features-<hash>.json.
func summaryPath(cache string) string {
	return strings.TrimSuffix(cache, ".json") + ".sum"
}

const summaryHeader = "runc-userns features summary 1"

// summary writes f's fields but Raw, one per line, after a header:
//
//	runc-userns features summary 1
//	nativeIdmap true
//	joinsUsernsFirst false
//	stdioChownedInside true
//	version 1.1.5
//
// ok is false for a version with a line break, which it cannot hold.
func (f *Features) summary() ([]byte, bool) {
	if strings.ContainsAny(f.Version, "\r\n") {
		return nil, false
	}
	return []byte(fmt.Sprintf("%s\nnativeIdmap %t\njoinsUsernsFirst %t\nstdioChownedInside %t\nversion %s\n",
		summaryHeader, f.NativeIdmap, f.JoinsUsernsFirst, f.StdioChownedInside, f.Version)), true
}

// parseSummary reads what summary writes, and nothing else: any other
// line, order or value makes it fail, and the caller probes again.
func parseSummary(b []byte) (*Features, bool) {
	lines := strings.Split(string(b), "\n")
	if len(lines) != 6 || lines[0] != summaryHeader || lines[5] != "" {
		return nil, false
	}
	var f Features
	for i, field := range []struct {
		name string
		v    *bool
	}{{"nativeIdmap", &f.NativeIdmap}, {"joinsUsernsFirst", &f.JoinsUsernsFirst}, {"stdioChownedInside", &f.StdioChownedInside}} {
		switch lines[1+i] {
		case field.name + " true":
			*field.v = true
		case field.name + " false":
		default:
			return nil, false
		}
	}
	v, ok := strings.CutPrefix(lines[4], "version ")
	if !ok || strings.Contains(v, "\r") {
		return nil, false
	}
	f.Version = v
	return &f, true
}

// FeaturesCache is the file under cacheDir that holds the features of the
// runtime at path with inode ino, size bytes, modified at mtimeNs (Unix
// nanoseconds).
func FeaturesCache(cacheDir, path string, ino uint64, size, mtimeNs int64) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d\x00%d", path, ino, size, mtimeNs)))
	return filepath.Join(cacheDir, "features-"+hex.EncodeToString(sum[:8])+".json")
}

// AmendFeatures edits a runtime's features document to say what the
// runtime does through runc-userns: "user" among linux.namespaces, and
// linux.mountExtensions.idmap.enabled as the kernel probe found it
// (containerd 2 admits hostUsers: false pods from these). Every other
// field is kept as the runtime wrote it.
func AmendFeatures(raw []byte, idmap bool) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("parse runtime features: %w", err)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	linux, _ := doc["linux"].(map[string]any)
	if linux == nil {
		linux = map[string]any{}
		doc["linux"] = linux
	}
	ns, _ := linux["namespaces"].([]any)
	hasUser := false
	for _, n := range ns {
		if n == "user" {
			hasUser = true
		}
	}
	if !hasUser {
		linux["namespaces"] = append(ns, "user")
	}
	ext, _ := linux["mountExtensions"].(map[string]any)
	if ext == nil {
		ext = map[string]any{}
		linux["mountExtensions"] = ext
	}
	im, _ := ext["idmap"].(map[string]any)
	if im == nil {
		im = map[string]any{}
		ext["idmap"] = im
	}
	im["enabled"] = idmap
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "    ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// parseVersion reads "1.1.5+ds1" or "1.3.0-rc.1" as 1, 1 / 1, 3.
func parseVersion(v string) (major, minor int, ok bool) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	var err error
	if major, err = strconv.Atoi(parts[0]); err != nil {
		return 0, 0, false
	}
	m := parts[1]
	if i := strings.IndexFunc(m, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		m = m[:i]
	}
	if minor, err = strconv.Atoi(m); err != nil {
		return 0, 0, false
	}
	return major, minor, true
}
