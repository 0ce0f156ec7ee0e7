package oci

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// ReadRegular reads the regular file at path, of at most max bytes, and
// returns its permission bits too. It opens non-blocking and refuses
// anything but a regular file: a FIFO or device planted where a file of
// the caller's or the operator's is expected must neither hang nor flood
// us.
func ReadRegular(path string, max int64) ([]byte, os.FileMode, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is a %s, not a regular file", path, FileKind(st.Mode()))
	}
	if st.Size() > max {
		return nil, 0, fmt.Errorf("%s is %d bytes, more than the %d this runtime reads", path, st.Size(), max)
	}
	// The size may change under us: read at most max, and refuse more.
	raw, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(raw)) > max {
		return nil, 0, fmt.Errorf("%s is more than the %d bytes this runtime reads", path, max)
	}
	return raw, st.Mode().Perm(), nil
}

// FileKind names a file's type in words, for errors.
func FileKind(m os.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "regular file"
	case t&os.ModeDir != 0:
		return "directory"
	case t&os.ModeSymlink != 0:
		return "symbolic link"
	case t&os.ModeNamedPipe != 0:
		return "FIFO"
	case t&os.ModeSocket != 0:
		return "socket"
	case t&os.ModeCharDevice != 0:
		return "character device"
	case t&os.ModeDevice != 0:
		return "block device"
	}
	return "file of another type"
}
