package idmap

import "errors"

// ErrUnsupported wraps the kernel's refusal to idmap a mount (EINVAL from
// mount_setattr, usually a filesystem without idmap support, or ENOSYS).
var ErrUnsupported = errors.New("idmapped mounts not supported here")
