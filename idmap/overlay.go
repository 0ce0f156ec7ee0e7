package idmap

import (
	"errors"
	"fmt"
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
