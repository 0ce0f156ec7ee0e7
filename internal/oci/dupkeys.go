package oci

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// annotationConflict describes how the spec's annotations could read
// differently to different tools, or returns "" when they cannot.
// encoding/json keeps the last of duplicate keys silently, and it takes
// every top-level member whose name folds to "annotations" ("Annotations"
// too) into the same map. A pod author who can get a key, or the whole
// object, repeated (a hand-written or concatenated spec) could then have one
// tool read one value and another tool the other. raw is already known to
// be valid JSON.
func annotationConflict(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "" // null: no annotations
	}
	member := ""
	for dec.More() {
		t, err := dec.Token()
		k, ok := t.(string)
		if err != nil || !ok {
			return ""
		}
		// EqualFold is the match encoding/json makes of keys to fields.
		if !strings.EqualFold(k, "annotations") {
			if skipValue(dec) != nil {
				return ""
			}
			continue
		}
		if member != "" {
			return fmt.Sprintf("the annotations object appears twice (as %q and %q)", member, k)
		}
		member = k
		if key, dup := duplicateKey(dec); dup {
			return fmt.Sprintf("annotation %q appears more than once", key)
		}
	}
	return ""
}

// duplicateKey reads one value from dec and returns a key that it holds
// twice, if it is an object that does.
func duplicateKey(dec *json.Decoder) (string, bool) {
	t, err := dec.Token()
	if err != nil || t != json.Delim('{') {
		return "", false // null, or a type error ParseSpec has refused already
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		k, ok := t.(string)
		if err != nil || !ok {
			return "", false
		}
		if seen[k] {
			return k, true
		}
		seen[k] = true
		if skipValue(dec) != nil {
			return "", false
		}
	}
	dec.Token() // the closing '}', for the caller's next member
	return "", false
}

func skipValue(dec *json.Decoder) error {
	var skip json.RawMessage
	return dec.Decode(&skip)
}

func checkDuplicateAnnotations(path string, raw []byte) error {
	if what := annotationConflict(raw); what != "" {
		return fmt.Errorf("%w: %s: %s: which value counts would depend on the reader; keep one", ErrBadSpec, path, what)
	}
	return nil
}
