package admin

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/runc-userns/runc-userns/idmap"
	"github.com/runc-userns/runc-userns/internal/config"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/libuserns"
	"github.com/runc-userns/runc-userns/pool"
)

// The checks doctorChecks runs: each reads the node (or asks the kernel to
// do something it then undoes) and judges what it found with the pure
// functions of doctor.go.

func (d *doctor) checkKernel() checkResult {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return checkResult{Status: statusFail, Detail: os.NewSyscallError("uname", err).Error()}
	}
	return kernelResult(unix.ByteSliceToString(u.Release[:]))
}

func (d *doctor) checkUserNamespaces() checkResult {
	raw, err := os.ReadFile(maxUserNamespacesFile)
	return maxUserNamespacesResult(string(raw), err)
}

func (d *doctor) checkConfig() checkResult {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error(),
			Hint: "until the config loads, every create, run and pool command through runc-userns fails, and so does every other call when the file's runtime and stateDir cannot be read from it; the checks that need it were skipped"}
	}
	d.cfg = cfg
	from := cfg.Path
	if from == "" {
		from = "defaults (no " + config.DefaultPath + ")"
	}
	return checkResult{Status: statusOK, Detail: fmt.Sprintf("%s: userns.mode %s, stateDir %s", from, cfg.Userns.Mode, cfg.StateDir)}
}

// poolProblem is a pool problem: a fail, unless no pod uses the pool.
func (d *doctor) poolProblem(detail, hint string) checkResult {
	if d.cfg.Userns.Mode == config.ModeOff {
		return checkResult{Status: statusWarn, Detail: detail, Hint: "userns.mode is off: no pod uses the pool until it is turned on; " + hint}
	}
	return checkResult{Status: statusFail, Detail: detail, Hint: hint}
}

func (d *doctor) checkPoolRanges() checkResult {
	const hint = "fix userns.ranges, userns.slotSize or the subordinate IDs of userns.subidUser: pods asking for a user namespace fail until then"
	ranges, source, err := pool.ResolveRanges(d.cfg.Userns.Ranges, d.cfg.Userns.SubidUser, pool.DefaultSourceEnv())
	if err != nil {
		return d.poolProblem(err.Error(), hint)
	}
	d.ranges = ranges
	p, err := OpenPool(d.cfg, d.cfg.StateDir)
	if err != nil {
		return d.poolProblem(err.Error(), hint)
	}
	d.capacity = p.Capacity()
	return checkResult{Status: statusOK, Detail: fmt.Sprintf("%d slots of %d IDs from %s", d.capacity, d.cfg.Userns.SlotSize, source)}
}

func (d *doctor) checkPoolUsage() checkResult {
	dir := d.cfg.StateDir
	// Without a lock file nor records (or an older release's pool.json)
	// there is nothing to read, and doctor leaves the directory as it
	// found it.
	_, lerr := os.Lstat(filepath.Join(dir, pool.LockFile))
	var allocs []pool.Allocation
	if !errors.Is(lerr, fs.ErrNotExist) || PoolExists(dir) {
		p, err := pool.OpenExisting(dir)
		if err == nil {
			allocs, err = p.List()
		}
		if err != nil {
			return d.poolProblem(err.Error(), "see runc-userns pool ls; the pool allocates nothing until its state reads")
		}
	}
	if d.ranges != nil && d.capacity >= 0 {
		if stray := straySlots(d.ranges, d.cfg.Userns.SlotSize, allocs); len(stray) > 0 {
			return d.poolProblem(strings.Join(stray, "; "),
				"restore the ranges and slot size those were allocated from, or release them once their pods are gone (runc-userns pool release OWNER): the pool allocates nothing until then")
		}
	}
	return poolUsageResult(d.capacity, len(allocs))
}

func (d *doctor) checkStateDir() checkResult {
	dir := d.cfg.StateDir
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return checkResult{Status: statusFail, Detail: dir + " is not a directory", Hint: "remove it or choose another stateDir"}
	} else if _, lerr := os.Lstat(dir); err != nil && lerr == nil {
		return checkResult{Status: statusFail, Detail: err.Error(), Hint: "stateDir is a symlink to nothing: remove it or choose another stateDir"}
	}
	on := existingAncestor(dir)
	fstype := idmap.FSType(on)
	detail := dir
	if on != dir {
		detail += " (not created yet)"
	}
	detail += " on " + fstype
	bad, mode, err := untraversable(dir, os.Stat)
	switch {
	case err != nil:
		return checkResult{Status: statusFail, Detail: detail + ": " + err.Error()}
	case bad != "":
		return checkResult{Status: statusFail,
			Detail: fmt.Sprintf("%s: %s has mode %#o: a pod's root (an unprivileged host ID) cannot reach its rootfs staged there", detail, bad, mode),
			Hint:   fmt.Sprintf("chmod o+x %s, or choose another stateDir", bad)}
	case fstype != "tmpfs":
		return checkResult{Status: statusWarn, Detail: detail + ": searchable by others, but not on a tmpfs",
			Hint: "keep stateDir on a tmpfs (the default /run/runc-userns is) so that a reboot clears the pool with the containers"}
	}
	return checkResult{Status: statusOK, Detail: detail + ": searchable by others"}
}

func (d *doctor) checkRuntime() checkResult {
	rt, err := runc.Find(d.cfg.Runtime, os.Getenv("PATH"))
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error()}
	}
	out, err := exec.Command(rt, "--version").Output()
	if err != nil {
		return checkResult{Status: statusFail, Detail: fmt.Sprintf("%s --version: %v", rt, err),
			Hint: "the configured runtime does not run; set \"runtime\" in the runc-userns config to the real runc"}
	}
	d.runtime = rt
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return checkResult{Status: statusOK, Detail: rt + ": " + first}
}

func (d *doctor) checkRuntimeIdmap() checkResult {
	// A cache of our own: doctor writes nothing into stateDir.
	tmp, err := os.MkdirTemp("", "runc-userns-doctor-")
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error()}
	}
	defer os.RemoveAll(tmp)
	f, err := runc.ProbeFeatures(d.runtime, tmp)
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error(),
			Hint: "runc-userns reads `" + d.runtime + " features` on every create; pods fail until it parses"}
	}
	if f.NativeIdmap {
		return checkResult{Status: statusOK, Detail: "native: the runtime applies MOUNT_ATTR_IDMAP itself (features: mountExtensions.idmap.enabled)"}
	}
	return checkResult{Status: statusOK, Detail: "not native (runc < 1.2): runc-userns stages idmapped mounts itself"}
}

// probeUserns returns a throwaway user namespace mapping 0-65535 to the
// pool's first slot (2147483648 without a pool), made once.
func (d *doctor) probeUserns() (*os.File, error) {
	if d.userns != nil || d.usernsErr != nil {
		return d.userns, d.usernsErr
	}
	host := pool.DefaultRanges()[0].HostID
	if len(d.ranges) > 0 {
		host = slices.MinFunc(d.ranges, func(a, b pool.Range) int { return cmp.Compare(a.HostID, b.HostID) }).HostID
	}
	m := libuserns.PodMappings(host, 65536)
	d.userns, d.usernsErr = libuserns.NewUserns(m, m)
	return d.userns, d.usernsErr
}

func (d *doctor) checkKernelIdmap() checkResult {
	ns, err := d.probeUserns()
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error(),
			Hint: "runc-userns creates one user namespace per pod: check user.max_user_namespaces and any LSM policy on user namespaces"}
	}
	// The state dir's filesystem (or, while it does not exist, the one it
	// will be created on), else /: the kernel can idmap if either can be.
	// Only sources (rootfs, volumes) are idmapped: check those with PATH.
	var failed []string
	for _, p := range []string{existingAncestor(d.cfg.StateDir), "/"} {
		if err := idmap.Probe(p, int(ns.Fd()), idmap.TopOnly); err != nil {
			failed = append(failed, err.Error())
			continue
		}
		detail := fmt.Sprintf("an idmapped clone of %s (%s) works", p, idmap.FSType(p))
		if len(failed) > 0 {
			detail += "; " + strings.Join(failed, "; ")
		}
		return checkResult{Status: statusOK, Detail: detail}
	}
	return checkResult{Status: statusFail, Detail: strings.Join(failed, "; "),
		Hint: "pods asking for a user namespace need idmapped mounts: Linux >= 5.12 and a filesystem that supports them (ext4, xfs, btrfs; tmpfs from 6.3); pass a rootfs or volume directory as PATH to check its filesystem"}
}

func (d *doctor) checkPath(path string) checkResult {
	if _, err := os.Stat(path); err != nil {
		return checkResult{Status: statusFail, Detail: err.Error(), Hint: "give the path of a rootfs or volume source that exists"}
	}
	fstype := idmap.FSType(path)
	ns, err := d.probeUserns()
	if err != nil {
		return checkResult{Status: statusFail, Detail: fstype + ": no user namespace to probe with: " + err.Error()}
	}
	if err := idmap.Probe(path, int(ns.Fd()), idmap.TopOnly); err != nil {
		hint := "the kernel refused to idmap a clone of this mount"
		if errors.Is(err, idmap.ErrUnsupported) {
			hint = "idmapped mounts need ext4, xfs or btrfs (tmpfs from Linux 6.3): a pod's rootfs here fails to start, a volume from here stays a plain bind (its files keep their host owners)"
		}
		return checkResult{Status: statusFail, Detail: fstype + ": " + err.Error(), Hint: hint}
	}
	return checkResult{Status: statusOK, Detail: fstype + ": idmapped mounts supported"}
}
