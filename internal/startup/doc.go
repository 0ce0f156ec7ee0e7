// Package startup sets up the Go runtime for what this binary is: a
// process that lives for tens of milliseconds, on a node that runs many of
// them at once. Importing it (for its init) is all it takes; it imports
// nothing but runtime and syscall, so that it initialises before the other
// packages' initialisers allocate.
//
// Its init does two things:
//
//   - Heap maps the start of the Go heap into the page tables in one
//     system call (MADV_POPULATE_WRITE) instead of a page fault per page.
//     A create touches ~1-1.8 MiB of fresh heap (~240 pages). A fault
//     costs ~0.25 us on bare metal but 14-20 us on the nested VM this was
//     measured on (each is a trap to the hypervisor), where populating
//     costs ~1 us a page. It only adds page-table entries for memory the
//     runtime has already mapped read-write (from the first allocation to
//     at most Window bytes on, within the runtime's 4 MiB heap chunk) and
//     never changes what a page holds: a populated page reads as zero, as
//     a faulted-in one does. Errors are ignored: it is a hint. Needs Linux
//     >= 5.14; an older kernel answers EINVAL and pages fault in as
//     before.
//   - It runs Go code on one P (GOMAXPROCS 1) unless the environment sets
//     GOMAXPROCS. The wrapper has no parallel work: it runs system calls
//     one after the other and waits for runc, and a blocking system call
//     still hands the P on, so goroutines keep running beside it. With a
//     second P the runtime keeps an idle thread spinning for work, starts
//     more threads, and takes CPU from the runc it waits for. The price:
//     with one P, sysmon retakes the P from any system call that outlasts
//     its 20 us tick and stays at that tick while the Go code makes system
//     calls. Measured both ways, one P was 2.2 ms faster a lifecycle in
//     one run (N=150) and no different in two later ones (N=100, N=200).
//
// bench/README.md (seventh round) has the measurements.
package startup
