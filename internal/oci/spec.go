package oci

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// MaxSpecSize bounds how much of config.json is read. Real specs are a few
// KiB; the bound keeps a hostile bundle from exhausting the node's memory.
const MaxSpecSize = 16 << 20

// Document is a loaded config.json. Spec is what modifiers edit; raw keeps
// the file as it was so that fields this runtime-spec version does not know
// survive the rewrite.
//
// Spec holds only the members the wrapper reads or edits (wire.go):
// process, hooks, linux.resources, linux.seccomp and the rest stay nil in
// it and go back to runc as the bytes they were (kept), unless one of them
// is given twice: then Spec has all of the file.
type Document struct {
	Path string
	Spec *specs.Spec

	raw  []byte
	mode os.FileMode
	// kept holds the members Spec leaves out, as bytes; nil when Spec has
	// all of raw decoded (a member kept as bytes was given twice).
	kept *wireSpec
	// known is the typed spec as loaded, re-encoded before any edit: the
	// fields our runtime-spec version knows. Anything in raw but not here
	// is foreign. Encode compares the edited spec with it.
	known []byte
	// foreign: raw has a member that no field of the typed spec takes,
	// at any depth (the decode finds out: decodeSpec).
	foreign bool
}

// Load reads and parses <bundle>/config.json.
func Load(bundle string) (*Document, error) {
	path := filepath.Join(bundle, "config.json")
	raw, mode, err := ReadRegular(path, MaxSpecSize)
	if err != nil {
		return nil, fmt.Errorf("bundle spec: %w", err)
	}
	return ParseSpec(path, raw, mode)
}

// ParseSpec parses raw as the spec found at path (path only names it in
// errors). It also encodes the typed spec as loaded (known), before
// anything edits it: the one decode then serves both the edit and the
// comparison Encode makes, where a second decode of raw cost a create
// ~0.1 ms (the twenty-third round of bench/README at cc12767).
func ParseSpec(path string, raw []byte, mode os.FileMode) (*Document, error) {
	spec, kept, foreign, err := decodeSpec(raw)
	if err != nil {
		return nil, describeJSONError(path, raw, err)
	}
	if err := checkDuplicateAnnotations(path, raw); err != nil {
		return nil, err
	}
	known, err := encodeSpec(spec, kept)
	if err != nil {
		return nil, fmt.Errorf("re-encode bundle spec %s: %w", path, err)
	}
	return &Document{Path: path, Spec: spec, raw: raw, mode: mode, kept: kept, known: known, foreign: foreign}, nil
}

func describeJSONError(path string, raw []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := position(raw, syn.Offset-1)
		return fmt.Errorf("%w: %s: invalid JSON at offset %d (line %d, column %d): %v; fix the file or the tool that wrote it", ErrBadSpec, path, syn.Offset, line, col, syn)
	case errors.As(err, &typ):
		line, col := position(raw, typ.Offset-1)
		return fmt.Errorf("%w: %s: field %q at offset %d (line %d, column %d) is a JSON %s, want %s", ErrBadSpec, path, jsonPath(typ.Field), typ.Offset, line, col, typ.Value, typ.Type)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: %s: truncated JSON (%d bytes): %v", ErrBadSpec, path, len(raw), err)
	}
	return fmt.Errorf("%w: %s: %v", ErrBadSpec, path, err)
}

// jsonPath is an UnmarshalTypeError's field path as the file's keys: the
// names of the structs wireSpec embeds (Spec, Linux) left out. Keys are
// the fields' JSON names, all lower-case at their start.
func jsonPath(field string) string {
	var keys []string
	for _, k := range strings.Split(field, ".") {
		if k != "Spec" && k != "Linux" {
			keys = append(keys, k)
		}
	}
	return strings.Join(keys, ".")
}

// position gives the line and column (both from 1) of the byte at index
// off; encoding/json reports offsets just past the offending byte.
func position(raw []byte, off int64) (line, col int) {
	if off > int64(len(raw)) {
		off = int64(len(raw))
	}
	if off < 0 {
		off = 0
	}
	line = 1 + bytes.Count(raw[:off], []byte("\n"))
	col = int(off) - bytes.LastIndexByte(raw[:off], '\n')
	return line, col
}

// Capabilities returns the spec's process.capabilities, nil when it has
// none. process is kept as bytes (wire.go): only its capabilities are
// decoded, and the typed spec stays as it is.
func (d *Document) Capabilities() (*specs.LinuxCapabilities, error) {
	if d.Spec.Process != nil {
		return d.Spec.Process.Capabilities, nil
	}
	if d.kept == nil || d.kept.Process == nil {
		return nil, nil
	}
	var p struct {
		Capabilities *specs.LinuxCapabilities `json:"capabilities"`
	}
	if err := json.Unmarshal(d.kept.Process.raw, &p); err != nil {
		return nil, fmt.Errorf("bundle spec %s: process.capabilities: %w", d.Path, err)
	}
	return p.Capabilities, nil
}

// Encode returns the file contents for the edited spec and whether they
// differ from what was loaded.
func (d *Document) Encode() ([]byte, bool, error) {
	edited, err := d.encodeEdited()
	if err != nil {
		return nil, false, err
	}
	if bytes.Equal(edited, d.known) {
		return d.raw, false, nil
	}
	if !d.foreign {
		// Every member of raw is a field of the typed spec, or kept as
		// bytes: edited says all of it. What it leaves out is what
		// encoding/json omits as empty (a "terminal": false, an
		// "options": []), which runc reads as it reads the member's
		// absence. Merging would only put those back, at the cost of
		// three generic decodes of the spec (~0.6 ms of a create in a
		// fresh process).
		return edited, true, nil
	}
	out, err := mergeForeign(edited, d.known, d.raw)
	if err != nil {
		return nil, false, fmt.Errorf("encode bundle spec %s: %w", d.Path, err)
	}
	return out, true, nil
}

// encodeEdited encodes Spec as edited, with the members kept as bytes.
func (d *Document) encodeEdited() ([]byte, error) {
	edited, err := encodeSpec(d.Spec, d.kept)
	if err != nil {
		return nil, fmt.Errorf("encode bundle spec %s: %w", d.Path, err)
	}
	return edited, nil
}

// Flush writes the edited spec back atomically: a temporary file in the
// bundle with the original mode, fsync, rename over config.json. It does
// nothing when no modifier changed the spec, so that a container we leave
// alone gets its config.json byte for byte.
func (d *Document) Flush() (bool, error) {
	out, changed, err := d.Encode()
	if err != nil || !changed {
		return false, err
	}
	return true, WriteFileAtomic(d.Path, out, d.mode)
}

// WriteFileAtomic replaces path with data so that a reader, or the file
// after a crash, is either the old or the new contents, never a mix or an
// empty file: a temporary file beside it, fsync, rename.
//
// The directory is not fsynced: that would only make the rename itself
// survive a power loss, and what we write is about containers, which a
// power loss ends. The old contents after a reboot are as good as the new
// ones (an unedited config.json is simply edited again by the next create,
// an edited one is undone through its stamp), and the extra fsync cost a
// journal commit on every create where the bundle is on disk (podman).
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
	return replaceFile(path, data, mode, true)
}

// ReplaceFile is WriteFileAtomic without the fsync: readers see the old or
// the new contents, but after a crash the file may be empty or missing. It
// is for files whose meaning ends with the boot anyway (they describe a
// mount or a namespace that a reboot removes).
func ReplaceFile(path string, data []byte, mode os.FileMode) error {
	return replaceFile(path, data, mode, false)
}

// RemoveTemps removes the temp files that writers of path (WriteFileAtomic,
// ReplaceFile) killed before their rename left beside it, so that its
// directory can be removed. A missing directory is fine.
func RemoveTemps(path string) error {
	dir, prefix := filepath.Dir(path), "."+filepath.Base(path)+".tmp-"
	list, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range list {
		if !strings.HasPrefix(e.Name(), prefix) || e.IsDir() {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

func replaceFile(path string, data []byte, mode os.FileMode, sync bool) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if sync {
		if err = tmp.Sync(); err != nil {
			return fmt.Errorf("write %s: fsync: %w", path, err)
		}
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
