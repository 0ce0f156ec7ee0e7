package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/runc-userns/runc-userns/idmap"
	"github.com/runc-userns/runc-userns/internal/config"
	"github.com/runc-userns/runc-userns/internal/runc"
	"github.com/runc-userns/runc-userns/libuserns"
	"github.com/runc-userns/runc-userns/pool"
)

// `runc-userns doctor [--json] [PATH...]` says whether this node can give
// pods user namespaces: a list of named checks, each ok, warn or fail with
// the rule it tests in its detail and what to do in its hint. It changes
// nothing on the host: it takes the pool's lock shared (as `pool ls` does),
// probes the runtime's features into a temporary directory it removes, and
// its idmap probes clone mounts without ever attaching them.

// checkStatus is a check's verdict. Only fail makes doctor exit non-zero:
// a fail is something a pod would hit; a warn is worth knowing but lets
// pods run.
type checkStatus string

const (
	statusOK   checkStatus = "ok"
	statusWarn checkStatus = "warn"
	statusFail checkStatus = "fail"
)

// checkResult is one line of the report.
type checkResult struct {
	Name   string      `json:"name"`
	Status checkStatus `json:"status"`
	Detail string      `json:"detail"`
	Hint   string      `json:"hint"`
}

// doctorReport is what `doctor --json` prints.
type doctorReport struct {
	OK     bool          `json:"ok"`
	Checks []checkResult `json:"checks"`
}

func newReport(results []checkResult) doctorReport {
	if results == nil {
		results = []checkResult{}
	}
	r := doctorReport{OK: true, Checks: results}
	for _, c := range results {
		if c.Status != statusOK && c.Status != statusWarn {
			r.OK = false // fail, or a status nobody meant: never report it as fine
		}
	}
	return r
}

func (r doctorReport) exitStatus() int {
	if r.OK {
		return 0
	}
	return 1
}

func (r doctorReport) failed() int {
	n := 0
	for _, c := range r.Checks {
		if c.Status != statusOK && c.Status != statusWarn {
			n++
		}
	}
	return n
}

// writeHuman prints one line per check, the hint (if any) on the next line
// under the detail:
//
//	ok    kernel       6.18.44: idmapped mounts (>= 5.12), also on tmpfs (>= 6.3)
//	FAIL  path /proc   proc: failed to set MOUNT_ATTR_IDMAP on /proc (proc): ...
//	                   hint: ...
func writeHuman(w io.Writer, r doctorReport) error {
	width := 0
	for _, c := range r.Checks {
		width = max(width, len(c.Name))
	}
	indent := strings.Repeat(" ", 6+width+2)
	var b strings.Builder
	for _, c := range r.Checks {
		status := string(c.Status)
		if c.Status == statusFail {
			status = "FAIL"
		}
		fmt.Fprintf(&b, "%-6s%-*s  %s\n", status, width, c.Name, c.Detail)
		if c.Hint != "" {
			fmt.Fprintf(&b, "%shint: %s\n", indent, c.Hint)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeJSON(w io.Writer, r doctorReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// kernelVersion is the numeric head of a kernel release ("6.1.0-18-amd64"
// is 6.1.0).
type kernelVersion struct{ Major, Minor, Patch int }

var kernelRelease = regexp.MustCompile(`^(\d+)\.(\d+)(?:\.(\d+))?`)

func parseKernelVersion(release string) (kernelVersion, error) {
	m := kernelRelease.FindStringSubmatch(release)
	if m == nil {
		return kernelVersion{}, fmt.Errorf("kernel release %q: want MAJOR.MINOR[.PATCH] first", release)
	}
	var v kernelVersion
	var err error
	for i, p := range []*int{&v.Major, &v.Minor, &v.Patch} {
		if m[i+1] == "" {
			break
		}
		if *p, err = strconv.Atoi(m[i+1]); err != nil {
			return kernelVersion{}, fmt.Errorf("kernel release %q: %w", release, err)
		}
	}
	return v, nil
}

func (v kernelVersion) atLeast(major, minor int) bool {
	return v.Major > major || v.Major == major && v.Minor >= minor
}

// Kernel versions that matter: idmapped mounts (mount_setattr with
// MOUNT_ATTR_IDMAP, ext4/xfs/btrfs) and idmapped tmpfs.
var (
	kernelIdmap      = kernelVersion{5, 12, 0}
	kernelTmpfsIdmap = kernelVersion{6, 3, 0}
)

// kernelResult judges a kernel release.
func kernelResult(release string) checkResult {
	v, err := parseKernelVersion(release)
	switch {
	case err != nil:
		return checkResult{Status: statusWarn, Detail: err.Error(),
			Hint: "runc-userns needs Linux >= 5.12; the kernel idmap check below says whether this one can idmap"}
	case !v.atLeast(kernelIdmap.Major, kernelIdmap.Minor):
		return checkResult{Status: statusFail, Detail: release + ": no idmapped mounts (they need >= 5.12)",
			Hint: "upgrade the kernel to 5.12 or later (6.3 or later for rootfs or volumes on tmpfs)"}
	case !v.atLeast(kernelTmpfsIdmap.Major, kernelTmpfsIdmap.Minor):
		return checkResult{Status: statusOK, Detail: release + ": idmapped mounts (>= 5.12), but not on tmpfs (>= 6.3)"}
	}
	return checkResult{Status: statusOK, Detail: release + ": idmapped mounts (>= 5.12), also on tmpfs (>= 6.3)"}
}

const maxUserNamespacesFile = "/proc/sys/user/max_user_namespaces"

// maxUserNamespacesResult judges the contents of max_user_namespaces (or
// the error reading it).
func maxUserNamespacesResult(content string, readErr error) checkResult {
	if errors.Is(readErr, fs.ErrNotExist) {
		return checkResult{Status: statusFail, Detail: maxUserNamespacesFile + " is missing: this kernel has no user namespaces",
			Hint: "use a kernel built with CONFIG_USER_NS=y"}
	}
	if readErr != nil {
		return checkResult{Status: statusFail, Detail: readErr.Error()}
	}
	n, err := strconv.ParseUint(strings.TrimSpace(content), 10, 64)
	if err != nil {
		return checkResult{Status: statusWarn, Detail: fmt.Sprintf("user.max_user_namespaces %q: not a number", strings.TrimSpace(content))}
	}
	if n == 0 {
		return checkResult{Status: statusFail, Detail: "user.max_user_namespaces is 0: no user namespace can be created",
			Hint: "sysctl -w user.max_user_namespaces=63000, and set it in /etc/sysctl.d/ to keep it"}
	}
	return checkResult{Status: statusOK, Detail: fmt.Sprintf("user.max_user_namespaces = %d", n)}
}

// poolUsageResult judges the pool's occupancy; capacity < 0 when the
// configured ranges are unknown (they did not resolve).
func poolUsageResult(capacity, used int) checkResult {
	if capacity < 0 {
		return checkResult{Status: statusOK, Detail: fmt.Sprintf("%d ranges in use (capacity unknown: see pool ranges)", used)}
	}
	free := max(capacity-used, 0)
	detail := fmt.Sprintf("%d of %d slots in use, %d free", used, capacity, free)
	if free == 0 {
		return checkResult{Status: statusWarn, Detail: detail + ": the next pod that asks for a user namespace fails",
			Hint: "reclaim the ranges of pods whose containers are all gone (runc-userns pool gc) or give the pool more ranges"}
	}
	return checkResult{Status: statusOK, Detail: detail}
}

// straySlots returns a message per allocation that is not exactly one slot
// of ranges, or that shares its slot with another: pool.Allocate refuses
// to allocate anything while such a record exists (see pool's rebuild).
func straySlots(ranges []pool.Range, slot uint32, allocs []pool.Allocation) []string {
	var out []string
	seen := map[uint32]string{}
	for _, a := range allocs {
		inSlot := a.Size == slot && slot > 0 && slices.ContainsFunc(ranges, func(r pool.Range) bool {
			return a.HostID >= r.HostID && uint64(a.HostID)+uint64(a.Size) <= uint64(r.HostID)+uint64(r.Size) &&
				(a.HostID-r.HostID)%slot == 0
		})
		switch other, dup := seen[a.HostID]; {
		case !inSlot:
			out = append(out, fmt.Sprintf("owner %s holds %s, not a slot of the configured pool", a.Owner, a.Range()))
		case dup:
			out = append(out, fmt.Sprintf("owners %s and %s both hold %s", other, a.Owner, a.Range()))
		default:
			seen[a.HostID] = a.Owner
		}
	}
	return out
}

// untraversable returns the first existing ancestor of stateDir (not
// stateDir itself, which runc-userns creates and chmods 0711) that others
// cannot search, with its mode: a pod's root, an unprivileged host ID,
// must reach the staged rootfs under stateDir (the rule
// state.MkdirTraversable enforces at create). Missing ancestors are
// created 0711, so they pass.
func untraversable(stateDir string, stat func(string) (fs.FileInfo, error)) (string, fs.FileMode, error) {
	for d := filepath.Dir(filepath.Clean(stateDir)); ; d = filepath.Dir(d) {
		st, err := stat(d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return "", 0, err
		case st.Mode().Perm()&0o001 == 0:
			return d, st.Mode().Perm(), nil
		}
		if d == filepath.Dir(d) {
			return "", 0, nil
		}
	}
}

// existingAncestor is path, or its nearest ancestor that exists
// (following symlinks): the directory whose filesystem path would be
// created on.
func existingAncestor(path string) string {
	for d := filepath.Clean(path); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
			return d
		}
	}
}

// doctor carries what earlier checks found to later ones.
type doctor struct {
	cfg       *config.Config
	ranges    []pool.Range // resolved, nil when they did not resolve
	capacity  int          // slots of the validated pool, -1 if unknown
	runtime   string
	userns    *os.File // throwaway namespace for idmap probes
	usernsErr error
}

func (d *doctor) close() {
	if d.userns != nil {
		d.userns.Close()
	}
}

// need is what a check needs from earlier ones; without it the check is
// left out of the report (the check that failed already says why).
type need int

const (
	needConfig need = 1 << iota
	needRuntime
)

type doctorCheck struct {
	name  string
	needs need
	run   func(d *doctor) checkResult
}

// doctorChecks are run in order; later checks use what earlier ones found.
var doctorChecks = []doctorCheck{
	{"kernel", 0, (*doctor).checkKernel},
	{"user namespaces", 0, (*doctor).checkUserNamespaces},
	{"config", 0, (*doctor).checkConfig},
	{"pool ranges", needConfig, (*doctor).checkPoolRanges},
	{"pool usage", needConfig, (*doctor).checkPoolUsage},
	{"state dir", needConfig, (*doctor).checkStateDir},
	{"runtime", needConfig, (*doctor).checkRuntime},
	{"runtime idmap", needConfig | needRuntime, (*doctor).checkRuntimeIdmap},
	{"kernel idmap", needConfig, (*doctor).checkKernelIdmap},
}

// pathChecks: for each PATH argument, whether its filesystem can be
// idmapped (as a rootfs or volume source would be).
func pathChecks(paths []string) []doctorCheck {
	var out []doctorCheck
	for _, p := range paths {
		out = append(out, doctorCheck{"path " + p, 0, func(d *doctor) checkResult { return d.checkPath(p) }})
	}
	return out
}

func runChecks(d *doctor, checks []doctorCheck) []checkResult {
	var out []checkResult
	for _, c := range checks {
		if c.needs&needConfig != 0 && d.cfg == nil || c.needs&needRuntime != 0 && d.runtime == "" {
			continue
		}
		r := c.run(d)
		r.Name = c.name
		out = append(out, r)
	}
	return out
}

func doctorCmd(ctx *cli.Context) error {
	d := &doctor{capacity: -1}
	defer d.close()
	r := newReport(runChecks(d, append(slices.Clone(doctorChecks), pathChecks(ctx.Args().Slice())...)))
	var err error
	if ctx.Bool("json") {
		err = writeJSON(os.Stdout, r)
	} else {
		err = writeHuman(os.Stdout, r)
	}
	if err != nil {
		return err
	}
	if n := r.failed(); n > 0 {
		return fmt.Errorf("doctor: %d of %d checks failed", n, len(r.Checks))
	}
	return nil
}

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
			Hint: "every runc call through runc-userns fails until the config loads; the checks that need it were skipped"}
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
	p, err := openPool(d.cfg, d.cfg.StateDir)
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
	if !errors.Is(lerr, fs.ErrNotExist) || poolExists(dir) {
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
