package runc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrSelf: the runtime found is this wrapper.
var ErrSelf = errors.New("refusing to run runc-userns as the real runc")

// fallbackPaths are searched when PATH is empty or has no runc: podman
// runs kill, delete and state with no PATH at all.
var fallbackPaths = []string{
	"/usr/local/sbin/runc", "/usr/local/bin/runc",
	"/usr/sbin/runc", "/usr/bin/runc", "/sbin/runc", "/bin/runc",
}

// Find returns the real runc: the configured path, else the first runc on
// PATH that is not this binary, else the first of fallbackPaths. Empty and
// relative PATH entries are skipped, as exec.LookPath refuses them: never
// a runc from the working directory (containerd's shim runs in the
// bundle).
func Find(configured, pathEnv string) (string, error) {
	self, err := os.Stat("/proc/self/exe")
	if err != nil {
		return "", fmt.Errorf("stat /proc/self/exe: %w", err)
	}
	if configured != "" {
		st, err := os.Stat(configured)
		if err != nil {
			return "", fmt.Errorf("runtime from the runc-userns config: %w", err)
		}
		if os.SameFile(st, self) {
			return "", fmt.Errorf("%w: the config's runtime %s is this binary; set it to the real runc (e.g. /usr/sbin/runc)", ErrSelf, configured)
		}
		return configured, nil
	}
	var candidates []string
	for _, dir := range filepath.SplitList(pathEnv) {
		if filepath.IsAbs(dir) {
			candidates = append(candidates, filepath.Join(dir, "runc"))
		}
	}
	candidates = append(candidates, fallbackPaths...)
	var skipped []string
	for _, c := range candidates {
		st, err := os.Stat(c)
		if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			continue
		}
		if os.SameFile(st, self) {
			skipped = append(skipped, c)
			continue
		}
		return c, nil
	}
	if len(skipped) > 0 {
		return "", fmt.Errorf("%w: every runc found (%s) is this binary; install the real runc or set \"runtime\" in the runc-userns config", ErrSelf, strings.Join(skipped, ", "))
	}
	return "", fmt.Errorf("real runc not found on PATH or in %s; install runc or set \"runtime\" in the runc-userns config", strings.Join(fallbackPaths, ", "))
}
