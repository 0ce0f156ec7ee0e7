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

// TestPrefaultImage: the constructor (prefault_image in fastpath_linux.c)
// ran before this test binary's Go runtime did, as it does before ours on
// every Go-path call. Every page of the binary's code, read-only data and
// data is then in the page tables, used or not: a mapping's Rss is its
// Size. Without it, code is mapped as it runs, 16 pages a fault.
func TestPrefaultImage(t *testing.T) {
	if err := unix.Madvise(make([]byte, os.Getpagesize()), unix.MADV_POPULATE_READ); errors.Is(err, unix.EINVAL) {
		t.Skip("MADV_POPULATE_READ needs Linux >= 5.14")
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
