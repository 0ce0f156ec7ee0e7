package main

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/runc-userns/runc-userns/internal/oci"
)

// layout names the files under stateDir (see README "State directory").
//
//	<stateDir>/pool.lock, pool.d/, pool.roots  the pool (package pool)
//	<stateDir>/pods/<owner>/userns             the pod's pinned user namespace
//	<stateDir>/pods/<owner>/mapping            "<hostID> <size>" of that namespace
//	<stateDir>/pods/<owner>/cgroup             the cgroup parent of the pod's sandbox
//	                                           (oci.PodCgroup), which its other
//	                                           containers must share
//	<stateDir>/containers/<root>/<id>/rootfs   a container's idmapped rootfs,
//	                                           mounted only while runc creates it
//	<stateDir>/containers/<root>/<id>/mounts/N its idmapped bind mount N (runc 1.1)
//	<stateDir>/containers/<root>/<id>/layers/N idmapped lower layer N of an overlay rootfs
//	<stateDir>/containers/<root>/<id>/netns    "<dev> <ino> <path>" of the network namespace
//	                                           runc < 1.3 starts in (netjoin.go)
//	<stateDir>/features-<hash>.json            the real runtime's `features`
//	<stateDir>/features-<hash>.sum             what a create needs of it, a field a line
//
// <root> is a short hash of runc's --root: container IDs are unique per
// root only (containerd runs one root per namespace).
type layout string

func (l layout) podsDir() string             { return filepath.Join(string(l), "pods") }
func (l layout) podDir(owner string) string  { return filepath.Join(l.podsDir(), owner) }
func (l layout) pin(owner string) string     { return filepath.Join(l.podDir(owner), "userns") }
func (l layout) mapping(owner string) string { return filepath.Join(l.podDir(owner), "mapping") }
func (l layout) podCgroup(owner string) string {
	return filepath.Join(l.podDir(owner), "cgroup")
}

// rootHash names runc root root in the state dir: container directories
// and in-flight markers are per root (container IDs are unique per root
// only, and containerd runs one root per namespace).
func rootHash(root string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(root)))
	return hex.EncodeToString(sum[:6])
}

func (l layout) containerDir(root, id string) string {
	return filepath.Join(string(l), "containers", rootHash(root), id)
}

// markerContainerDir is the container directory of the in-flight marker
// named name ("<root hash>-<id>": inflight names it with containerDir's
// hash).
func (l layout) markerContainerDir(name string) (string, bool) {
	hash, id, ok := strings.Cut(name, "-")
	if !ok || len(hash) != len(rootHash("")) || strings.Trim(hash, "0123456789abcdef") != "" || oci.ValidateID(id) != nil {
		return "", false
	}
	return filepath.Join(string(l), "containers", hash, id), true
}

// stagingMounts are the mount points in a container directory that hold
// its staging mounts: the rootfs, and the directories of its bind mounts
// and overlay layers. The container directory itself is a mount too
// (stageContainerDir); in an older create's layout the last two were.
func stagingMounts(containerDir string) []string {
	return []string{filepath.Join(containerDir, "rootfs"), filepath.Join(containerDir, "mounts"), filepath.Join(containerDir, "layers")}
}

func (l layout) stagedRootfs(root, id string) string {
	return stagingMounts(l.containerDir(root, id))[0]
}

func (l layout) mountsDir(root, id string) string {
	return stagingMounts(l.containerDir(root, id))[1]
}

func (l layout) stagedMount(root, id string, index int) string {
	return filepath.Join(l.mountsDir(root, id), strconv.Itoa(index))
}

func (l layout) layersDir(root, id string) string {
	return stagingMounts(l.containerDir(root, id))[2]
}
