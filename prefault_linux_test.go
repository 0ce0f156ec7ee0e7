//go:build cgo

package main

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPopulateDecided: the constructor of a fresh process of this test
// binary decided as RUNC_USERNS_POPULATE says, without timing a fault;
// unset, it timed one and decided by its cost (populate_wanted).
func TestPopulateDecided(t *testing.T) {
	if env, ok := os.LookupEnv("RUNC_USERNS_TEST_POPULATE_DECIDED"); ok {
		on, ns := populateDecided()
		switch env {
		case "0", "1":
			if on != (env == "1") || ns != -1 {
				t.Fatalf("RUNC_USERNS_POPULATE=%s: populate %v, fault timed at %d ns; want %v, not timed", env, on, ns, env == "1")
			}
		default:
			if ns <= 0 || on != populateWanted(nil, ns) {
				t.Fatalf("RUNC_USERNS_POPULATE unset: populate %v after a fault timed at %d ns", on, ns)
			}
			t.Logf("a fault costs %d ns here: populate %v", ns, on)
		}
		return
	}
	for _, env := range []string{"unset", "0", "1"} {
		t.Run(env, func(t *testing.T) {
			e := append(withoutEnv(os.Environ(), "RUNC_USERNS_POPULATE"), "RUNC_USERNS_TEST_POPULATE_DECIDED="+env)
			if env != "unset" {
				e = append(e, "RUNC_USERNS_POPULATE="+env)
			}
			t.Logf("%s", inFreshProcess(t, e))
		})
	}
}

// withoutEnv is env without name's entries.
func withoutEnv(env []string, name string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, name+"=") {
			out = append(out, e)
		}
	}
	return out
}

// TestPrefaultImage: the constructor (prefault_image in fastpath_linux.c)
// runs before a test binary's Go runtime does, as it does before ours on
// every Go-path call. Where it populates (RUNC_USERNS_POPULATE=1 here; a
// machine where faults are dear decides so by itself) every page of the
// binary's code, read-only data and data is then in the page tables, used
// or not: a mapping's Rss is its Size. Without it, code is mapped as it
// runs, 16 pages a fault (or a large folio). In a fresh process of this
// test binary.
func TestPrefaultImage(t *testing.T) {
	if err := unix.Madvise(make([]byte, os.Getpagesize()), unix.MADV_POPULATE_READ); errors.Is(err, unix.EINVAL) {
		t.Skip("MADV_POPULATE_READ needs Linux >= 5.14")
	}
	if os.Getenv("RUNC_USERNS_TEST_PREFAULT") != "1" {
		inFreshProcess(t, append(os.Environ(), "RUNC_USERNS_TEST_PREFAULT=1", "RUNC_USERNS_POPULATE=1"))
		return
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var checked []string
	var vma, perms string
	var size int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && len(fields[1]) == 4: // a mapping's first line
			vma, perms, size = "", "", 0
			if len(fields) == 6 && fields[5] == exe {
				vma, perms = fields[0], fields[1]
			}
		case vma == "" || len(fields) != 3:
		case fields[0] == "Size:":
			size, _ = strconv.Atoi(fields[1])
		case fields[0] == "Rss:":
			rss, _ := strconv.Atoi(fields[1])
			// The code, and every mapping of more than 16 pages (the
			// read-only data and the data); not the page or two that
			// glibc made read-only after relocating (RELRO).
			if !strings.Contains(perms, "x") && size <= 64 {
				continue
			}
			if rss != size {
				t.Errorf("%s %s of %s: %d KiB of %d KiB in the page tables, want all", vma, perms, exe, rss, size)
			}
			checked = append(checked, vma+" "+perms)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(checked) < 3 {
		t.Fatalf("found %v mapped from %s, want its code, read-only data and data", checked, exe)
	}
}
