// Package prefault maps the start of the Go heap into the page tables in
// one system call when a process starts, instead of a page fault per page.
//
// The wrapper is a short-lived process: a create touches ~1-1.8 MiB of
// fresh heap (~240 pages) and exits. A page fault costs ~0.25 us on bare
// metal but 14-20 us on the nested VM this was measured on (each is a
// trap to the hypervisor), where MADV_POPULATE_WRITE maps fresh pages at
// ~1 us each. Importing the package (for its init) is all it takes; it
// imports nothing but syscall, so that it runs before the other packages'
// initialisers allocate.
//
// Guarantees: it only adds page-table entries for memory the Go runtime
// has already mapped read-write (the part of the runtime's 4 MiB heap
// chunk from the first allocation on, at most Window bytes), and never
// changes what any page holds: a populated page reads as zero, as a
// faulted-in one does. Every error is ignored: it is a hint.
//
// Kernel requirements: MADV_POPULATE_WRITE (Linux >= 5.14); an older
// kernel answers EINVAL and the pages fault in as before.
package prefault
