package state

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/runc-userns/runc-userns/internal/oci"
)

// Layout names the files under a state directory (see doc.go, and README
// "State directory"): the Layout is the directory's path.
type Layout string

// PodsDir holds a directory for each pod in a pool user namespace.
func (l Layout) PodsDir() string { return filepath.Join(string(l), "pods") }

// PodDir is pod owner's directory.
func (l Layout) PodDir(owner string) string { return filepath.Join(l.PodsDir(), owner) }

// Pin is the bind mount of the pod's user namespace (libuserns.Pin).
func (l Layout) Pin(owner string) string { return filepath.Join(l.PodDir(owner), "userns") }

// PodIPC is the pin of the pod's IPC namespace, owned by its user
// namespace: made when the pod's spec joins an IPC namespace by path that
// the host's user namespace owns (CRI-O's pinns), which the pod's root
// could not join, nor mount mqueue in.
func (l Layout) PodIPC(owner string) string { return filepath.Join(l.PodDir(owner), "ipc") }

// PodUTS is the pin of the pod's UTS namespace, as PodIPC.
func (l Layout) PodUTS(owner string) string { return filepath.Join(l.PodDir(owner), "uts") }

// PodsLock is flock(2)ed around everything that pins or unpins a pod whose
// first container, not a sandbox, takes its range (CRI-O without infra
// containers), and around every release of a range with its pins
// (LockPods).
func (l Layout) PodsLock() string { return filepath.Join(string(l), "pods.lock") }

// Mapping records the range the pinned user namespace maps.
func (l Layout) Mapping(owner string) string { return filepath.Join(l.PodDir(owner), "mapping") }

// PodCgroup records the cgroup parent of the pod's sandbox.
func (l Layout) PodCgroup(owner string) string {
	return filepath.Join(l.PodDir(owner), "cgroup")
}

// RootHash names runc root root in the state dir: container directories
// and in-flight markers are per root (container IDs are unique per root
// only, and containerd runs one root per namespace).
func RootHash(root string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(root)))
	return hex.EncodeToString(sum[:6])
}

// ContainerDir is container id's directory: its staging mounts, its
// container:<ID> target's pins and its network namespace record.
func (l Layout) ContainerDir(root, id string) string {
	return filepath.Join(l.ContainersDir(), RootHash(root), id)
}

// ContainersDir holds the container directories, one level of root
// hashes down: nsjoin recognises its pins in any of them.
func (l Layout) ContainersDir() string { return filepath.Join(string(l), "containers") }

// markerContainerDir is the container directory of the in-flight marker
// named name ("<root hash>-<id>": Inflight names it with ContainerDir's
// hash).
func (l Layout) markerContainerDir(name string) (string, bool) {
	hash, id, ok := strings.Cut(name, "-")
	if !ok || len(hash) != len(RootHash("")) || strings.Trim(hash, "0123456789abcdef") != "" || oci.ValidateID(id) != nil {
		return "", false
	}
	return filepath.Join(string(l), "containers", hash, id), true
}

// stagingMounts are the mount points in a container directory that hold
// its staging mounts: the rootfs, and the directories of its bind mounts
// and overlay layers. The container directory itself is a mount too
// (idmap.StageDir); in an older create's layout the last two were.
func stagingMounts(containerDir string) []string {
	return []string{filepath.Join(containerDir, "rootfs"), filepath.Join(containerDir, "mounts"), filepath.Join(containerDir, "layers")}
}

// StagedRootfs is where container id's idmapped rootfs is mounted while
// runc creates it.
func (l Layout) StagedRootfs(root, id string) string {
	return stagingMounts(l.ContainerDir(root, id))[0]
}

// MountsDir holds container id's staged bind mounts (runc 1.1).
func (l Layout) MountsDir(root, id string) string {
	return stagingMounts(l.ContainerDir(root, id))[1]
}

// StagedMount is where container id's bind mount number index is staged.
func (l Layout) StagedMount(root, id string, index int) string {
	return filepath.Join(l.MountsDir(root, id), strconv.Itoa(index))
}

// LayersDir holds container id's idmapped overlay layers: lower layer N
// at N, the directory of the upper and work directories at upper.
func (l Layout) LayersDir(root, id string) string {
	return stagingMounts(l.ContainerDir(root, id))[2]
}

// NetjoinRecord records the network namespace runc < 1.3 is started in
// for container id ("<dev> <ino> <path>").
func (l Layout) NetjoinRecord(root, id string) string {
	return filepath.Join(l.ContainerDir(root, id), "netns")
}

// InflightDir holds the in-flight markers (inflight_linux.go).
func (l Layout) InflightDir() string { return filepath.Join(string(l), "inflight") }

// Inflight is the in-flight marker of container id of runc root root.
func (l Layout) Inflight(root, id string) string {
	return filepath.Join(l.InflightDir(), RootHash(root)+"-"+id)
}
