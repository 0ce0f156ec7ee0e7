package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/runc-userns/runc-userns/internal/config"
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
// MOUNT_ATTR_IDMAP, ext4/xfs/btrfs), overlayfs on idmapped layers (the
// overlay rootfs of containerd and podman) and idmapped tmpfs.
var (
	kernelIdmap        = kernelVersion{5, 12, 0}
	kernelOverlayIdmap = kernelVersion{5, 19, 0}
	kernelTmpfsIdmap   = kernelVersion{6, 3, 0}
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
	case !v.atLeast(kernelOverlayIdmap.Major, kernelOverlayIdmap.Minor):
		return checkResult{Status: statusWarn, Detail: release + ": idmapped mounts (>= 5.12), but overlayfs takes no idmapped layers (>= 5.19): a pool pod's overlay rootfs (containerd's, podman's) fails",
			Hint: "upgrade the kernel to 5.19 or later, or give pool pods a directory rootfs"}
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
