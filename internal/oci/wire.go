package oci

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// wireSpec is config.json as a create decodes it: the members the wrapper
// reads or edits are typed (specs.Spec's, embedded), the ones it never looks
// at are rawMembers, which shadow specs.Spec's fields of the same name
// (encoding/json takes the shallower field). A real spec's process,
// linux.resources and linux.seccomp are most of its members: decoding them
// cold, with the reflection that builds encoding/json's decoders for their
// types, was ~0.55 of the ~0.75 ms a fresh process spent decoding the
// benchmark's spec (the eighteenth round of bench/README at cc12767). What is kept as bytes
// goes back to runc as it came, members this runtime-spec version does not
// know included, without the merge that foreign members need elsewhere.
//
// A modifier that comes to need one of these members must move it to the
// typed side: encodeSpec refuses a spec that sets a member kept as bytes
// rather than drop the edit.
type wireSpec struct {
	specs.Spec
	Process *rawMember `json:"process,omitempty"`
	Hooks   *rawMember `json:"hooks,omitempty"`
	Linux   *wireLinux `json:"linux,omitempty"`
	Solaris *rawMember `json:"solaris,omitempty"`
	Windows *rawMember `json:"windows,omitempty"`
	VM      *rawMember `json:"vm,omitempty"`
	ZOS     *rawMember `json:"zos,omitempty"`
}

// wireLinux: linux's namespaces, ID mappings, sysctls, cgroups path, mount
// label, rootfs propagation and masked paths are typed; the rest is kept as
// bytes.
type wireLinux struct {
	specs.Linux
	Resources     *rawMember `json:"resources,omitempty"`
	Devices       *rawMember `json:"devices,omitempty"`
	Seccomp       *rawMember `json:"seccomp,omitempty"`
	ReadonlyPaths *rawMember `json:"readonlyPaths,omitempty"`
	IntelRdt      *rawMember `json:"intelRdt,omitempty"`
	Personality   *rawMember `json:"personality,omitempty"`
	TimeOffsets   *rawMember `json:"timeOffsets,omitempty"`
}

// rawMember is a member's value as its bytes. twice: the member was given
// more than once (under keys that fold alike, "process" and "Process"),
// which runc, decoding both into one struct, reads as one object merged
// from all of them; bytes cannot say that, so such a spec is decoded
// whole. A JSON null resets the member (encoding/json sets the pointer to
// nil without calling UnmarshalJSON), as it resets runc's.
type rawMember struct {
	raw   json.RawMessage
	twice bool
}

func (m *rawMember) UnmarshalJSON(b []byte) error {
	m.twice = m.twice || m.raw != nil
	m.raw = append(json.RawMessage(nil), b...)
	return nil
}

func (m *rawMember) MarshalJSON() ([]byte, error) { return m.raw, nil }

func (m *rawMember) givenTwice() bool { return m != nil && m.twice }

// twice reports whether a member kept as bytes was given twice.
func (w *wireSpec) twice() bool {
	members := []*rawMember{w.Process, w.Hooks, w.Solaris, w.Windows, w.VM, w.ZOS}
	if l := w.Linux; l != nil {
		members = append(members, l.Resources, l.Devices, l.Seccomp, l.ReadonlyPaths, l.IntelRdt, l.Personality, l.TimeOffsets)
	}
	for _, m := range members {
		if m.givenTwice() {
			return true
		}
	}
	return false
}

// typed is the spec modifiers edit: the typed members, linux among them.
func (w *wireSpec) typed() *specs.Spec {
	s := w.Spec
	s.Linux = nil
	if w.Linux != nil {
		s.Linux = &w.Linux.Linux
	}
	return &s
}

// decodeSpec decodes config.json for a create: typed where the wrapper
// looks, bytes elsewhere (kept), or all of it typed (kept nil) when a
// member kept as bytes is given twice. foreign: raw has a member that no
// field of the typed spec takes, at any depth (members kept as bytes are
// not looked into: they go back as they came).
func decodeSpec(raw []byte) (s *specs.Spec, kept *wireSpec, foreign bool, err error) {
	s, kept, foreign, err = decodeChecked(raw, false)
	if err != nil || !kept.twice() {
		return s, kept, foreign, err
	}
	return decodeChecked(raw, true)
}

// decodeChecked decodes raw refusing members no field takes, and only if
// that fails, again as json.Unmarshal does: a spec without foreign
// members, the usual one, is decoded once. Unknown members are the one
// error the second decode does not repeat; any other (a type error, data
// after the value) is its to report, in json.Unmarshal's words.
func decodeChecked(raw []byte, full bool) (*specs.Spec, *wireSpec, bool, error) {
	if s, kept, err := decodeAs(raw, full, true); err == nil {
		return s, kept, false, nil
	}
	s, kept, err := decodeAs(raw, full, false)
	if err != nil {
		return nil, nil, false, err
	}
	return s, kept, true, nil
}

// decodeAs decodes raw into a wireSpec, or a whole specs.Spec (full).
// strict refuses a member that no field takes (DisallowUnknownFields);
// it does not look into members kept as bytes.
func decodeAs(raw []byte, full, strict bool) (*specs.Spec, *wireSpec, error) {
	if full {
		var s specs.Spec
		if err := unmarshal(raw, &s, strict); err != nil {
			return nil, nil, err
		}
		return &s, nil, nil
	}
	var w wireSpec
	if err := unmarshal(raw, &w, strict); err != nil {
		return nil, nil, err
	}
	return w.typed(), &w, nil
}

// unmarshal is json.Unmarshal, or, strict, a decode that also refuses
// unknown members. Both refuse anything but whitespace after the value.
func unmarshal(raw []byte, v any, strict bool) error {
	if !strict {
		return json.Unmarshal(raw, v)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimLeft(raw[dec.InputOffset():], " \t\r\n")) != 0 {
		return errTrailingData
	}
	return nil
}

// errTrailingData: a strict decode found more than the value; its caller
// decodes again as json.Unmarshal, which says where.
var errTrailingData = errors.New("data after the JSON value")

// encodeSpec encodes s, with the members kept as bytes put back (kept nil:
// s is all of the spec). It refuses an s that sets a member kept as bytes,
// which the encoding would silently drop.
func encodeSpec(s *specs.Spec, kept *wireSpec) ([]byte, error) {
	if kept == nil {
		return json.Marshal(s)
	}
	if name := keptMemberSet(s); name != "" {
		return nil, fmt.Errorf("internal error: the edited spec sets %s, which runc-userns passes through as loaded, undecoded (internal/oci/wire.go)", name)
	}
	// The members kept as bytes as loaded, the typed ones as edited.
	w := *kept
	w.Spec, w.Linux = *s, nil
	w.Spec.Linux = nil // shadowed by w.Linux in any case
	if s.Linux != nil {
		var l wireLinux
		if kept.Linux != nil {
			l = *kept.Linux
		}
		l.Linux = *s.Linux
		w.Linux = &l
	}
	return json.Marshal(&w)
}

// keptMemberSet names a member of s that wireSpec keeps as bytes and s
// sets, or returns "".
func keptMemberSet(s *specs.Spec) string {
	switch {
	case s.Process != nil:
		return "process"
	case s.Hooks != nil:
		return "hooks"
	case s.Solaris != nil:
		return "solaris"
	case s.Windows != nil:
		return "windows"
	case s.VM != nil:
		return "vm"
	case s.ZOS != nil:
		return "zos"
	}
	l := s.Linux
	switch {
	case l == nil:
		return ""
	case l.Resources != nil:
		return "linux.resources"
	case l.Devices != nil:
		return "linux.devices"
	case l.Seccomp != nil:
		return "linux.seccomp"
	case l.ReadonlyPaths != nil:
		return "linux.readonlyPaths"
	case l.IntelRdt != nil:
		return "linux.intelRdt"
	case l.Personality != nil:
		return "linux.personality"
	case l.TimeOffsets != nil:
		return "linux.timeOffsets"
	}
	return ""
}
