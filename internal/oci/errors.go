package oci

import "errors"

var (
	// ErrBadSpec: config.json does not parse as an OCI runtime spec.
	ErrBadSpec = errors.New("invalid bundle spec")
	// ErrBadAnnotation: an annotation under our prefix has a value we refuse.
	ErrBadAnnotation = errors.New("invalid annotation")
)
