//go:build !cgo

package libuserns

import (
	"errors"
	"os"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// newUserns needs the C holder (holder_linux.c).
func newUserns(_, _ []specs.LinuxIDMapping, _ bool) (_, _, _ *os.File, _ error) {
	return nil, nil, nil, errors.New("this runc-userns was built without cgo (CGO_ENABLED=0) and cannot create user namespaces: rebuild it with `make build`")
}

// joinAndReadMaps needs the C child (holder_linux.c).
func joinAndReadMaps(_ *os.File) (_, _ []byte, _ error) {
	return nil, nil, errors.New("this runc-userns was built without cgo (CGO_ENABLED=0) and cannot read a joined user namespace's mappings: rebuild it with `make build`")
}

// ReapHolders has nothing to reap without the C holder.
func ReapHolders() {}

// WaitHolders has nothing to wait for without the C holder.
func WaitHolders() {}
