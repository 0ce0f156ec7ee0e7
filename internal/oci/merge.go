package oci

import (
	"bytes"
	"encoding/json"
	"strings"
)

// mergeForeign puts back into edited every object member of raw that the
// typed spec does not know: present in raw, absent from known (the typed
// spec as loaded, re-encoded). Members the typed spec knows are taken from
// edited, so a modifier's removals stay removed. Arrays are walked element
// by element over raw's elements, which requires of modifiers that they
// edit elements in place or append (never insert or reorder); an array
// that shrank belongs to the modifier.
//
// Numbers are kept as json.Number so that large IDs do not pass through
// float64.
func mergeForeign(edited, known, raw []byte) ([]byte, error) {
	e, err := decodeGeneric(edited)
	if err != nil {
		return nil, err
	}
	k, err := decodeGeneric(known)
	if err != nil {
		return nil, err
	}
	r, err := decodeGeneric(raw)
	if err != nil {
		return nil, err
	}
	merged := mergeValue(e, k, r)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(merged); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func decodeGeneric(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func mergeValue(edited, known, raw any) any {
	switch e := edited.(type) {
	case map[string]any:
		r, ok := raw.(map[string]any)
		if !ok {
			return edited
		}
		k, _ := known.(map[string]any)
		for key, rv := range r {
			// encoding/json (runc's decoder too) matches object keys to
			// struct fields case-insensitively: "Linux" is the linux field.
			kk, isKnown := lookupFold(k, key)
			ek, inEdited := lookupFold(e, key)
			switch {
			case !isKnown && !inEdited:
				e[key] = rv // foreign: keep it as it was
			case isKnown && inEdited:
				e[ek] = mergeValue(e[ek], k[kk], rv)
			}
		}
		return e
	case []any:
		r, ok := raw.([]any)
		k, _ := known.([]any)
		// Modifiers edit elements in place or append: the first len(r)
		// elements still correspond. An array that shrank is the
		// modifier's own (it removed what it had added).
		if !ok || len(r) != len(k) || len(e) < len(r) {
			return edited
		}
		for i := range r {
			e[i] = mergeValue(e[i], k[i], r[i])
		}
		return e
	}
	return edited
}

// lookupFold finds key in m, exactly or else case-insensitively, as
// encoding/json matches keys to fields.
func lookupFold(m map[string]any, key string) (string, bool) {
	if _, ok := m[key]; ok {
		return key, true
	}
	for k := range m {
		if strings.EqualFold(k, key) {
			return k, true
		}
	}
	return "", false
}
