// Package mounttest has the mount helpers that tests of several packages
// share (idmap, internal/state): counting what is mounted below a
// directory, and detaching what a failed test left there. It is imported
// by _test.go files only, so it never reaches the binary. It reads
// /proc/self/mountinfo (github.com/moby/sys/mountinfo) and detaches with
// umount2(MNT_DETACH), which needs CAP_SYS_ADMIN.
package mounttest
