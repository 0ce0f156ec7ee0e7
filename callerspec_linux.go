package main

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// isUserns checks that path is a user namespace.
func isUserns(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("not a namespace: it is a %s", st.Mode().Type())
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	t, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE)
	if errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.EINVAL) {
		return errors.New("not a namespace (a regular file)")
	}
	if err != nil {
		return os.NewSyscallError("ioctl NS_GET_NSTYPE", err)
	}
	if t != unix.CLONE_NEWUSER {
		return fmt.Errorf("a namespace of another type (%#x), not a user namespace", t)
	}
	return nil
}
