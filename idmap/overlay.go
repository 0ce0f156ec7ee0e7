package idmap

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Overlay is an overlay filesystem's layers, as its mount options say.
type Overlay struct {
	Lower []string // top first, as in lowerdir=
	Upper string
	Work  string
	// Other holds every other option, in order (index=off, xino, ...).
	Other []string
	// Flags are the mount's own ro, nosuid, nodev and noexec (MS_*), which
	// an overlay built on o keeps (OverlayAt reads them; ParseOverlay
	// sees only superblock options).
	Flags uintptr
}

// ErrNotOverlay: the options lack a lowerdir.
var ErrNotOverlay = errors.New("not an overlay mount")

// ParseOverlay reads an overlay's superblock options (the last field of
// its mountinfo line, unescaped). Paths containing ',' or ':' are escaped
// with '\' by overlayfs; such paths are refused here (containerd and
// podman never make them) rather than misread. Lower layers come as one
// lowerdir= list or, for an overlay made with fsconfig (Linux 6.8), as
// one lowerdir+= each; data-only layers (datadir+=, or "::" in lowerdir=)
// are refused. A lower layer may be a relative path (see OverlayAt).
func ParseOverlay(opts string) (*Overlay, error) {
	o := &Overlay{}
	for _, opt := range strings.Split(opts, ",") {
		key, value, _ := strings.Cut(opt, "=")
		switch key {
		case "lowerdir", "lowerdir+":
			if strings.Contains(value, `\`) {
				return nil, fmt.Errorf("overlay %s %q has escaped characters: not supported", key, value)
			}
			layers := []string{value}
			if key == "lowerdir" {
				layers = strings.Split(value, ":")
			}
			for _, l := range layers {
				if l == "" {
					return nil, fmt.Errorf("overlay %s %q: data-only or empty layers are not supported", key, value)
				}
				o.Lower = append(o.Lower, l)
			}
		case "datadir+":
			return nil, fmt.Errorf("overlay datadir+ %q: data-only layers are not supported", value)
		case "upperdir":
			o.Upper = value
		case "workdir":
			o.Work = value
		case "rw", "ro":
			// mount flags, not overlay options
		default:
			o.Other = append(o.Other, opt)
		}
	}
	if len(o.Lower) == 0 {
		return nil, ErrNotOverlay
	}
	if (o.Upper == "") != (o.Work == "") {
		return nil, fmt.Errorf("overlay has upperdir %q but workdir %q", o.Upper, o.Work)
	}
	return o, nil
}

// Options renders the overlay's mount data with its lower layers replaced.
func (o *Overlay) Options(lower []string) string {
	parts := []string{"lowerdir=" + strings.Join(lower, ":")}
	if o.Upper != "" {
		parts = append(parts, "upperdir="+o.Upper, "workdir="+o.Work)
	}
	return strings.Join(append(parts, o.Other...), ",")
}

// IndexOn says whether the overlay runs with the inodes index
// (index=on): an explicit index= option (the last one counts, as the
// kernel reads them), else kernelDefault, the overlay module's index
// parameter, which the kernel leaves out of a mount's options when the
// mount has the default.
func (o *Overlay) IndexOn(kernelDefault bool) bool {
	on := kernelDefault
	for _, opt := range o.Other {
		switch opt {
		case "index=on":
			on = true
		case "index=off":
			on = false
		}
	}
	return on
}

// Volatile says whether the overlay was mounted with the volatile option
// (podman's for a container run with --rm).
func (o *Overlay) Volatile() bool {
	for _, opt := range o.Other {
		if opt == "volatile" {
			return true
		}
	}
	return false
}

// upperBase is the directory whose one idmapped clone holds both the upper
// directory and the work directory work of a staged overlay (overlayfs
// wants them on one mount): their nearest common ancestor, with each one's
// path relative to it. containerd (snapshots/<id>/{fs,work}) and
// containers/storage (overlay/<id>/{diff,work}) keep them side by side.
// Both paths must be absolute and clean, and neither inside the other
// (overlayfs refuses that too).
func upperBase(upper, work string) (base, relUpper, relWork string, err error) {
	if !filepath.IsAbs(upper) || !filepath.IsAbs(work) || filepath.Clean(upper) != upper || filepath.Clean(work) != work {
		return "", "", "", fmt.Errorf("upper directory %q and work directory %q must be absolute, clean paths", upper, work)
	}
	base = filepath.Dir(upper)
	for !within(work, base) {
		base = filepath.Dir(base)
	}
	relUpper, _ = filepath.Rel(base, upper)
	relWork, _ = filepath.Rel(base, work)
	if relUpper == "." || relWork == "." || within(work, upper) || within(upper, work) {
		return "", "", "", fmt.Errorf("upper directory %s and work directory %s are one inside the other: overlayfs wants two separate directories", upper, work)
	}
	return base, relUpper, relWork, nil
}

// within says whether path is dir or below it (both clean and absolute).
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}
