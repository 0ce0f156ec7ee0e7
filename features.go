package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/runc-userns/runc-userns/idmap"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/libuserns"
)

// features prints the real runtime's features, amended with what
// runc-userns adds (containerd runs it once at start, with no global
// flags, to decide whether hostUsers: false pods may run here).
func (a *app) features() int {
	f, err := runc.ProbeFeatures(a.Runtime, a.Cfg.StateDir)
	if err != nil {
		return a.Fail(err)
	}
	out, err := runc.AmendFeatures(f.Raw, a.kernelCanIdmap())
	if err != nil {
		return a.Fail(err)
	}
	os.Stdout.Write(out)
	return 0
}

// kernelCanIdmap probes once per boot whether the kernel can idmap a
// mount here: a throwaway user namespace and a detached, never attached
// idmapped clone of "/" or of the state directory's filesystem. The answer
// is cached in stateDir under the boot ID.
func (a *app) kernelCanIdmap() bool {
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	cache := filepath.Join(a.Cfg.StateDir, "kernel-idmap-"+strings.TrimSpace(string(boot)))
	if v, err := os.ReadFile(cache); err == nil && len(boot) > 0 {
		return string(v) == "1"
	}
	ok := probeIdmap(a.Cfg.StateDir) == nil
	if len(boot) > 0 && os.MkdirAll(a.Cfg.StateDir, 0o711) == nil {
		v := "0"
		if ok {
			v = "1"
		}
		_ = os.WriteFile(cache, []byte(v), 0o644)
	}
	return ok
}

// probeIdmap reports why idmapped mounts do not work here, or nil.
func probeIdmap(stateDir string) error {
	m := libuserns.PodMappings(2147483648, 65536)
	ns, err := libuserns.NewUserns(m, m)
	if err != nil {
		return err
	}
	defer ns.Close()
	dir := stateDir
	for {
		if _, err := os.Stat(dir); err == nil || dir == filepath.Dir(dir) {
			break
		}
		dir = filepath.Dir(dir)
	}
	var errs []error
	for _, p := range []string{"/", dir} {
		if err := idmap.Probe(p, int(ns.Fd()), idmap.TopOnly); err == nil {
			return nil
		} else {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}
