package libuserns

import (
	"path/filepath"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// Locked mount flags. A bind mount made from inside a user namespace keeps
// the source mount's nosuid, nodev and noexec locked: a remount that does
// not repeat them fails with EPERM. runc 1.1 remounts a bind mount with
// exactly the flags the spec lists, so containerd's sandbox /dev/shm
// (options "rbind", "ro" over a nosuid,nodev,noexec tmpfs) fails in a pod
// user namespace: "mount ... to rootfs at /dev/shm ... flags: 0x5021:
// operation not permitted". LockedFlags adds to such a mount the flags its
// source already has (LockedFlags), which changes nothing the container could observe.

// remountOptions are the options that make runc remount a bind mount.
var remountOptions = []string{"ro", "nosuid", "nodev", "noexec", "sync", "dirsync", "mand", "noatime", "nodiratime", "relatime", "strictatime", "nosymfollow"}

var lockedOptions = []struct {
	flag   int64
	option string
	undo   string
}{
	{unix.ST_NOSUID, "nosuid", "suid"},
	{unix.ST_NODEV, "nodev", "dev"},
	{unix.ST_NOEXEC, "noexec", "exec"},
}

// LockedFlags returns, by mount index, the options to add to the spec's
// bind mounts that runc will remount: the source's locked flags they miss.
// A mount that explicitly clears a flag (suid, dev, exec) is left alone:
// runc reports the conflict in its own words.
func LockedFlags(s *specs.Spec, bundle string) map[int][]string {
	add := map[int][]string{}
	for i, m := range s.Mounts {
		if m.Type != "bind" && !slices.Contains(m.Options, "bind") && !slices.Contains(m.Options, "rbind") {
			continue
		}
		if !slices.ContainsFunc(m.Options, func(o string) bool { return slices.Contains(remountOptions, o) }) {
			continue
		}
		src := m.Source
		if !filepath.IsAbs(src) {
			src = filepath.Join(bundle, src)
		}
		var st unix.Statfs_t
		if unix.Statfs(src, &st) != nil {
			continue // runc reports a missing source itself
		}
		for _, l := range lockedOptions {
			if st.Flags&l.flag != 0 && !slices.Contains(m.Options, l.option) && !slices.Contains(m.Options, l.undo) {
				add[i] = append(add[i], l.option)
			}
		}
	}
	return add
}

// LockedFlagsModifier adds the options LockedFlags found.
type LockedFlagsModifier map[int][]string

func (m LockedFlagsModifier) Modify(s *specs.Spec) error {
	for i, opts := range m {
		if i < len(s.Mounts) {
			s.Mounts[i].Options = append(s.Mounts[i].Options, opts...)
		}
	}
	return nil
}
