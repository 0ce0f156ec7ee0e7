//go:build cgo

package libuserns

// #include "holder_linux.h"
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// newUserns makes the namespace with a holder child (holder_linux.c): a
// clone(CLONE_VM|CLONE_NEWUSER) that shares our address space, so that no
// page table is copied and no page of ours is made copy-on-write, as a
// fork (what syscall.ForkExec does for CLONE_NEWUSER) would. On a VM where
// page-table updates trap to the hypervisor that fork cost ~3 ms a call;
// this costs about as much as starting a thread. The whole exchange (clone,
// both maps, the open) runs in one C call, on one thread, with no Go code
// in between.
//
// The holder is told to exit but not waited for: its exit and our wake-up
// took 0.4 ms in the median and up to 4.3 ms of a create on the VM
// measured (perf, 16 creates), most of it after the child had exited. It
// is reaped once it is gone, by the next NewUserns or ReapHolders
// (WaitHolders waits for it); until then its stack stays mapped. A
// process that exits first leaves it to init.
func newUserns(uid, gid []specs.LinuxIDMapping, ipcUTS bool) (user, ipc, uts *os.File, err error) {
	uidMap, gidMap := []byte(FormatMappings(uid)), []byte(FormatMappings(gid))
	if len(uidMap) == 0 || len(gidMap) == 0 {
		return nil, nil, nil, fmt.Errorf("empty uid or gid mapping")
	}
	reapHolders(false)
	var step, pid, ipcFD, utsFD C.int
	var stack unsafe.Pointer
	fd := C.runc_userns_new(
		(*C.char)(unsafe.Pointer(&uidMap[0])), C.size_t(len(uidMap)),
		(*C.char)(unsafe.Pointer(&gidMap[0])), C.size_t(len(gidMap)),
		C.int(boolInt(ipcUTS)), &ipcFD, &utsFD,
		&step, &pid, &stack)
	keepHolder(pid, stack)
	if fd < 0 {
		errno := syscall.Errno(-fd)
		switch step {
		case C.HOLDER_STEP_UID_MAP:
			return nil, nil, nil, &os.PathError{Op: "write", Path: "/proc/<holder>/uid_map", Err: errno}
		case C.HOLDER_STEP_GID_MAP:
			return nil, nil, nil, &os.PathError{Op: "write", Path: "/proc/<holder>/gid_map", Err: errno}
		case C.HOLDER_STEP_OPEN:
			return nil, nil, nil, &os.PathError{Op: "open", Path: "/proc/<holder>/ns/user", Err: errno}
		case C.HOLDER_STEP_OPEN_IPC:
			return nil, nil, nil, &os.PathError{Op: "open", Path: "/proc/<holder>/ns/ipc", Err: errno}
		case C.HOLDER_STEP_OPEN_UTS:
			return nil, nil, nil, &os.PathError{Op: "open", Path: "/proc/<holder>/ns/uts", Err: errno}
		}
		return nil, nil, nil, os.NewSyscallError("clone CLONE_NEWUSER", errno)
	}
	user = os.NewFile(uintptr(fd), "userns")
	if ipcUTS {
		ipc, uts = os.NewFile(uintptr(ipcFD), "ipcns"), os.NewFile(uintptr(utsFD), "utsns")
	}
	return user, ipc, uts, nil
}

// joinAndReadMaps reads the uid_map and gid_map of the user namespace ns through
// a child that joins it (holder_linux.c, runc_userns_maps): a
// clone(CLONE_VM) like the holder, which setns(2)s into ns (Go cannot: a
// user namespace is joined only by a single-threaded process) and waits,
// while we read its maps from /proc/<child>, which no other process can
// have while it is our unreaped child. Nothing is resolved by path: the
// namespace is the fd's, and the child's /proc/<pid>/ns/user is checked to
// be that very namespace before its maps are read. The maps come relative
// to our user namespace (host IDs, for a wrapper in the host's). The child
// is reaped as NewUserns's holders are.
func joinAndReadMaps(ns *os.File) (uid, gid []byte, err error) {
	uidBuf, gidBuf := make([]byte, maxMapSize), make([]byte, maxMapSize)
	reapHolders(false)
	var step, pid C.int
	var uidLen, gidLen C.size_t
	var stack unsafe.Pointer
	rc := C.runc_userns_maps(C.int(ns.Fd()),
		(*C.char)(unsafe.Pointer(&uidBuf[0])), &uidLen,
		(*C.char)(unsafe.Pointer(&gidBuf[0])), &gidLen, C.size_t(maxMapSize),
		&step, &pid, &stack)
	runtime.KeepAlive(ns)
	keepHolder(pid, stack)
	if rc < 0 {
		errno := syscall.Errno(-rc)
		switch step {
		case C.MAPS_STEP_SETNS:
			return nil, nil, os.NewSyscallError("setns CLONE_NEWUSER", errno)
		case C.MAPS_STEP_CHECK:
			if errno == syscall.ESRCH {
				return nil, nil, errors.New("the child that joined the namespace is not in it")
			}
			return nil, nil, &os.PathError{Op: "stat", Path: "/proc/<child>/ns/user", Err: errno}
		case C.MAPS_STEP_UID_MAP:
			return nil, nil, &os.PathError{Op: "read", Path: "/proc/<child>/uid_map", Err: errno}
		case C.MAPS_STEP_GID_MAP:
			return nil, nil, &os.PathError{Op: "read", Path: "/proc/<child>/gid_map", Err: errno}
		}
		return nil, nil, os.NewSyscallError("clone", errno)
	}
	return uidBuf[:uidLen], gidBuf[:gidLen], nil
}

// holders are the holder children not reaped yet.
var holders struct {
	sync.Mutex
	list []holder
}

type holder struct {
	pid   C.int
	stack unsafe.Pointer
}

// ReapHolders reaps the holders that have exited and frees their stacks,
// without waiting for the others.
func ReapHolders() { reapHolders(false) }

// WaitHolders waits for every holder not reaped yet. Each was told to exit
// before NewUserns returned, and exits after a few system calls.
func WaitHolders() { reapHolders(true) }

// reapHolders reaps the holders that have exited, or with block all.
func reapHolders(block bool) {
	holders.Lock()
	defer holders.Unlock()
	left := holders.list[:0]
	for _, h := range holders.list {
		if C.runc_userns_reap(h.pid, h.stack, boolInt(block)) == 0 {
			left = append(left, h)
		}
	}
	clear(holders.list[len(left):])
	holders.list = left
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// keepHolder records a child that runc_userns_new or runc_userns_maps
// started (pid > 0), for reapHolders.
func keepHolder(pid C.int, stack unsafe.Pointer) {
	if pid > 0 {
		holders.Lock()
		holders.list = append(holders.list, holder{pid, stack})
		holders.Unlock()
	}
}
