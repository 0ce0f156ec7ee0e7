package idmap

import "errors"

// ErrUnsupported wraps the kernel's refusal to idmap a mount (EINVAL from
// mount_setattr, usually a filesystem without idmap support, or ENOSYS).
var ErrUnsupported = errors.New("idmapped mounts not supported here")

// ErrNoSource wraps a clone whose source does not exist on the host: for
// instance one inside the container's rootfs, under an earlier mount of
// the same spec, which only runc makes (see UnderEarlierMount).
var ErrNoSource = errors.New("mount source does not exist")

// ErrOverlayIndex: an overlay rootfs mounted with the inodes index
// (index=on) locks its upper directory to itself; no second overlay can
// share it.
var ErrOverlayIndex = errors.New("overlay rootfs mounted with index=on")
