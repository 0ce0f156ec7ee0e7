// Package netns moves one OS thread into a network namespace given by path,
// for a runtime that must inherit that namespace instead of joining it.
//
// Why: runc older than 1.3 joins the namespaces given by path with the user
// namespace first. A container in a pod user namespace that must join a
// network namespace created by the host (containerd's CNI netns, owned by
// the initial user namespace) then lacks CAP_SYS_ADMIN over it and fails
// with "failed to setns into net namespace: operation not permitted". The
// wrapper instead enters the network namespace itself, on a locked thread,
// and starts or execs runc from that thread: runc and the container inherit
// it, and the spec no longer asks runc to join it.
//
// Guarantees: Enter changes only the calling thread, which stays locked to
// its goroutine until the returned restore moves it back (a thread that
// cannot be moved back stays locked, and Go discards it when the goroutine
// exits). An ID names a namespace by the nsfs device and inode, so a path
// that now names another namespace is refused, not entered.
//
// Kernel: setns(2) with CLONE_NEWNET needs CAP_SYS_ADMIN in the caller's
// and in the namespace's owning user namespace (the wrapper runs as host
// root).
package netns
