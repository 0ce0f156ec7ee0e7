package libuserns

import (
	"os"
	"strings"
	"testing"
)

func TestIsUserns(t *testing.T) {
	cases := []struct {
		path string
		want string // "" for a user namespace
	}{
		{"/proc/self/ns/user", ""},
		{"/proc/self/ns/net", "a namespace of another type"},
		{"/etc/passwd", "not a namespace (a regular file)"},
		{"/dev/null", "not a namespace: it is a character device"},
		{"/proc/self", "not a namespace: it is a directory"},
		{"/nonexistent/ns", "no such file or directory"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			err := IsUserns(c.path, kindName)
			if c.want == "" {
				if err != nil {
					t.Fatalf("IsUserns(%s): %v", c.path, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("IsUserns(%s) = %v, want %q", c.path, err, c.want)
			}
		})
	}
}

// kindName names the types the cases use, as main's oci.FileKind does.
func kindName(m os.FileMode) string {
	switch {
	case m&os.ModeDir != 0:
		return "directory"
	case m&os.ModeCharDevice != 0:
		return "character device"
	}
	return "file of another type"
}
