package oci

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// duplicateAnnotation returns a key that the spec's top-level annotations
// object holds twice. encoding/json keeps the last of duplicate keys
// silently; a pod author who can get a key duplicated (a hand-written or
// concatenated spec) could then have one tool read one value and another
// tool the other. raw is already known to be valid JSON.
func duplicateAnnotation(raw []byte) (string, bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return "", false
	}
	ann, ok := top["annotations"]
	if !ok {
		return "", false
	}
	dec := json.NewDecoder(bytes.NewReader(ann))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		k, ok := t.(string)
		if !ok {
			return "", false
		}
		if seen[k] {
			return k, true
		}
		seen[k] = true
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return "", false
		}
	}
	return "", false
}

func checkDuplicateAnnotations(path string, raw []byte) error {
	if k, dup := duplicateAnnotation(raw); dup {
		return fmt.Errorf("%w: %s: annotation %q appears more than once: which value counts would depend on the reader; keep one", ErrBadSpec, path, k)
	}
	return nil
}
