package nsjoin

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRef(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		id      string
		ok      bool
		wantErr string // "" means no error
	}{
		{name: "reference", in: "container:abc", id: "abc", ok: true},
		{name: "containerd ID", in: "container:" + strings.Repeat("0123456789abcdef", 4), id: strings.Repeat("0123456789abcdef", 4), ok: true},
		{name: "every allowed byte", in: "container:aZ09_+-.", id: "aZ09_+-.", ok: true},
		{name: "1024-byte ID", in: "container:" + strings.Repeat("a", 1024), id: strings.Repeat("a", 1024), ok: true},
		{name: "empty ID", in: "container:", wantErr: "must not be empty"},
		{name: "parent", in: "container:../x", wantErr: `byte '/' is not allowed`},
		{name: "dot dot", in: "container:..", wantErr: `must not be ".."`},
		{name: "dot", in: "container:.", wantErr: `must not be "."`},
		{name: "slash", in: "container:a/b", wantErr: "is not allowed"},
		{name: "oversized ID", in: "container:" + strings.Repeat("a", 1025), wantErr: "longer than 1024 bytes"},
		{name: "blank inside", in: "container: abc", wantErr: "is not allowed"},
		{name: "NUL", in: "container:a\x00b", wantErr: "is not allowed"},
		{name: "nested reference", in: "container:container:x", wantErr: "':' is not allowed"},
		{name: "capitalised prefix", in: "Container:x", wantErr: "in lower case"},
		{name: "upper-case prefix", in: "CONTAINER:x", wantErr: "in lower case"},
		{name: "proc path", in: "/proc/1/ns/pid"},
		{name: "pinned path", in: "/run/netns/x"},
		{name: "empty", in: ""},
		{name: "prefix without colon", in: "container"},
		{name: "another scheme", in: "pod:x"},
		{name: "relative path", in: "ns/pid"},
		{name: "leading blank", in: " container:x"},
		{name: "non-ASCII prefix", in: "contäiner:x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, ok, err := ParseRef(c.in, validID)
			if c.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseRef(%.60q) = %q, %v, want an error", c.in, id, ok)
				}
				if !errors.Is(err, ErrBadRef) {
					t.Errorf("error %q does not wrap ErrBadRef", err)
				}
				if !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("error %q does not mention %q", err, c.wantErr)
				}
				if len(err.Error()) > 400 {
					t.Errorf("error is %d bytes long: the reference must be cut", len(err.Error()))
				}
				if ok || id != "" {
					t.Errorf("ParseRef returned %q, %v with its error", id, ok)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRef(%q): %v", c.in, err)
			}
			if id != c.id || ok != c.ok {
				t.Errorf("ParseRef(%.60q) = %.60q, %v, want %.60q, %v", c.in, id, ok, c.id, c.ok)
			}
		})
	}
}

func TestParseAnnotation(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		id      string
		wantErr string
	}{
		{name: "reference", in: "container:abc", id: "abc"},
		{name: "surrounding blanks", in: " \tcontainer:abc\n", id: "abc"},
		{name: "a path is not a reference", in: "/proc/1/ns/pid", wantErr: "want container:<ID>"},
		{name: "another word", in: "host", wantErr: "want container:<ID>"},
		{name: "empty", in: "", wantErr: "want container:<ID>"},
		{name: "malformed", in: "container:../x", wantErr: "is not allowed"},
		{name: "capitalised", in: "Container:x", wantErr: "in lower case"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, err := ParseAnnotation(c.in, validID)
			if c.wantErr != "" {
				if err == nil || !errors.Is(err, ErrBadRef) || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("ParseAnnotation(%q) = %q, %v; want ErrBadRef mentioning %q", c.in, id, err, c.wantErr)
				}
				return
			}
			if err != nil || id != c.id {
				t.Fatalf("ParseAnnotation(%q) = %q, %v; want %q", c.in, id, err, c.id)
			}
		})
	}
}

// FuzzParseRef: ParseRef never panics; what it accepts is exactly
// RefPrefix followed by a valid ID; it never passes on a string that
// starts like a reference; its errors are bounded.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{
		"container:abc", "container:", "container:../x", "Container:x", "/proc/1/ns/pid",
		"", "container", "container:a/b", "CONTAINER:", "container:container:x", "contäiner:x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok, err := ParseRef(s, validID)
		switch {
		case err != nil:
			if ok || id != "" {
				t.Fatalf("ParseRef(%q) = %q, %v with error %v", s, id, ok, err)
			}
			if !errors.Is(err, ErrBadRef) {
				t.Fatalf("error %v does not wrap ErrBadRef", err)
			}
			if !LooksLikeRef(s) {
				t.Fatalf("refused %q, which does not look like a reference", s)
			}
			if len(err.Error()) > 600 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
		case ok:
			if RefPrefix+id != s {
				t.Fatalf("ParseRef(%q) = %q: not the rest of the string", s, id)
			}
			if validID(id) != nil {
				t.Fatalf("ParseRef(%q) accepted invalid ID %q", s, id)
			}
			if strings.ContainsAny(id, "/\x00") || id == "." || id == ".." {
				t.Fatalf("ParseRef(%q) accepted a path-like ID %q", s, id)
			}
		default:
			if LooksLikeRef(s) {
				t.Fatalf("ParseRef(%q) passed on a string that looks like a reference", s)
			}
			if id != "" {
				t.Fatalf("ParseRef(%q) = %q for a non-reference", s, id)
			}
		}
		// The annotation form agrees with the path form on references.
		aid, aerr := ParseAnnotation(s, validID)
		if ok && (aerr != nil || aid != id) && strings.TrimSpace(s) == s {
			t.Fatalf("ParseAnnotation(%q) = %q, %v; ParseRef said %q", s, aid, aerr, id)
		}
	})
}
