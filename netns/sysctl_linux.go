package netns

import (
	"fmt"
	"os"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// PlanSysctls checks the spec's net.* sysctls and makes them the values
// the host writes into the network namespace at path (which must be one
// now), with each of defaults (PodDefaults, or nil) that the spec does not
// set: ping_group_range's group IDs are the pod's, and go through its
// group mapping gidMap. The zero value when there are none.
func PlanSysctls(s *specs.Spec, path string, defaults map[string]string, gidMap []specs.LinuxIDMapping) (Sysctls, error) {
	want := SysctlsOf(s)
	if len(want) == 0 && len(defaults) == 0 {
		return Sysctls{}, nil
	}
	f, id, err := Open(path)
	if err != nil {
		return Sysctls{}, err
	}
	f.Close()
	values, err := sysctlValues(want, defaults, gidMap)
	if err != nil {
		return Sysctls{}, err
	}
	return Sysctls{Path: path, ID: id, Values: values, Spec: want}, nil
}

// Write enters the namespace on a locked thread and writes each value, in
// key order, through a /proc/sys/net opened there (the sysctl tables of a
// lookup are those of the caller's network namespace). The zero value
// writes nothing.
func (n Sysctls) Write() error {
	if n.Path == "" {
		return nil
	}
	restore, _, err := Enter(n.Path, n.ID)
	if err != nil {
		return fmt.Errorf("enter network namespace %s to write its sysctls: %w", n.Path, err)
	}
	err = n.writeHere()
	if rerr := restore(); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// writeHere writes the values into the calling thread's network namespace.
// Each file is opened beneath /proc/sys/net, without following a link or
// leaving the mount: a key names a sysctl of that directory or nothing.
func (n Sysctls) writeHere() error {
	dir, err := os.Open("/proc/sys/net")
	if err != nil {
		return err
	}
	defer dir.Close()
	keys := make([]string, 0, len(n.Values))
	for k := range n.Values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, rel := range keys {
		fd, err := unix.Openat2(int(dir.Fd()), rel, &unix.OpenHow{
			Flags:   unix.O_WRONLY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
		})
		if err != nil {
			return fmt.Errorf("sysctl /proc/sys/net/%s in network namespace %s: open: %w (is it a network sysctl this kernel has in a network namespace?)", rel, n.Path, err)
		}
		f := os.NewFile(uintptr(fd), "/proc/sys/net/"+rel)
		_, err = f.WriteString(n.Values[rel])
		f.Close()
		if err != nil {
			return fmt.Errorf("sysctl /proc/sys/net/%s=%q in network namespace %s: %w", rel, n.Values[rel], n.Path, err)
		}
	}
	return nil
}
