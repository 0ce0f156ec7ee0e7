package admin

import (
	"strings"
	"testing"
)

// The help runc-userns adds after runc's lists each of its verbs (from the
// definitions Run uses, so a new one shows) and the annotations given.
func TestHelpTail(t *testing.T) {
	tail := HelpTail([]string{"runc-userns.io/userns=auto|host"})
	var want []string
	for _, c := range newApp().Commands {
		if len(c.Subcommands) == 0 {
			want = append(want, "runc-userns "+c.Name+" "+c.ArgsUsage)
		}
		for _, sc := range c.Subcommands {
			want = append(want, "runc-userns "+c.Name+" "+sc.Name)
		}
	}
	want = append(want, "Pod annotations: runc-userns.io/userns=auto|host", "README.md")
	if len(want) < 6 {
		t.Fatalf("only %d verbs found: %v", len(want), want)
	}
	for _, w := range want {
		if !strings.Contains(tail, w) {
			t.Errorf("help tail lacks %q:\n%s", w, tail)
		}
	}
	for _, v := range []string{"pool", "doctor"} {
		if !IsVerb(v) || !strings.Contains(tail, "runc-userns "+v+" ") {
			t.Errorf("verb %s: IsVerb %v, in the help %v", v, IsVerb(v), strings.Contains(tail, "runc-userns "+v+" "))
		}
	}
}
