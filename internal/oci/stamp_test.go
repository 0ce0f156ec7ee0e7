package oci

import (
	"errors"
	"testing"
)

// A stamp verifies with the key that signed it, for the container it was
// written for; a copy onto another container does not. A stamp of an
// earlier release (version 1, bound to nothing) verifies by its MAC alone,
// except where a bound one is asked for (a create).
func TestStampVerify(t *testing.T) {
	key := make([]byte, 32)
	other := append([]byte(nil), key...)
	other[0] = 1
	c1 := Binding{ID: "c1", Root: "/run/runc", Bundle: "/run/b/c1"}
	stamp := func(v int, b Binding, k []byte) *Stamp {
		s := &Stamp{Version: v, Owner: "pod", Root: b.Root, StateDir: "/run/runc-userns", HostID: 1 << 30, Size: 65536}
		if v >= StampVersion {
			s.ID, s.Bundle = b.ID, b.Bundle
		}
		s.Sign(k)
		return s
	}
	tampered := stamp(StampVersion, c1, key)
	tampered.ID = "c2"
	cases := []struct {
		name  string
		stamp *Stamp
		for_  Binding
		bound bool
		want  error
	}{
		{"its own container", stamp(StampVersion, c1, key), c1, true, nil},
		{"its own, spelled with a trailing slash", stamp(StampVersion, c1, key), Binding{"c1", "/run/runc/", "/run/b/c1/"}, true, nil},
		{"its own container, at delete", stamp(StampVersion, c1, key), Binding{ID: "c1", Root: "/run/runc"}, false, nil},
		{"its own bundle, created again under another ID and root", stamp(StampVersion, c1, key), Binding{Bundle: "/run/b/c1"}, true, nil},
		{"copied to another bundle, at create", stamp(StampVersion, c1, key), Binding{Bundle: "/run/b/c2"}, true, ErrCopiedStamp},
		{"another key", stamp(StampVersion, c1, other), c1, true, ErrForgedStamp},
		{"no MAC", &Stamp{Version: StampVersion, ID: "c1", Root: "/run/runc"}, c1, true, ErrForgedStamp},
		{"its ID edited after signing", tampered, Binding{"c2", "/run/runc", "/run/b/c1"}, true, ErrForgedStamp},
		{"copied to another ID", stamp(StampVersion, c1, key), Binding{"c2", "/run/runc", "/run/b/c1"}, true, ErrCopiedStamp},
		{"copied to another root", stamp(StampVersion, c1, key), Binding{"c1", "/run/containerd/runc/k8s.io", "/run/b/c1"}, true, ErrCopiedStamp},
		{"copied to another bundle", stamp(StampVersion, c1, key), Binding{"c1", "/run/runc", "/run/b/c2"}, true, ErrCopiedStamp},
		{"copied to another ID, at delete", stamp(StampVersion, c1, key), Binding{ID: "c2", Root: "/run/runc"}, false, ErrCopiedStamp},
		{"copied to another root, at delete", stamp(StampVersion, c1, key), Binding{ID: "c1", Root: "/run/other"}, false, ErrCopiedStamp},
		{"an earlier release's, at delete", stamp(1, c1, key), Binding{ID: "c9", Root: "/run/runc"}, false, nil},
		{"an earlier release's, at create", stamp(1, c1, key), c1, true, ErrUnboundStamp},
		{"an earlier release's, forged", stamp(1, c1, other), c1, false, ErrForgedStamp},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.stamp.Verify(key, c.for_, c.bound)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("Verify = %v, want %v", err, c.want)
			}
		})
	}
}
