// Package runc finds and starts the real runc, and reads what the wrapper
// needs of it: its features (cached on disk) and a container's state.json.
//
// # Finding runc
//
// Find returns the configured runtime when there is one (it must exist),
// else the first "runc" in PATH's absolute directories (empty and relative
// entries are skipped: never a runc from the working directory, where
// containerd's shim runs), else the first of /usr/local/sbin,
// /usr/local/bin, /usr/sbin, /usr/bin, /sbin and /bin. A searched
// candidate must be a regular file with an execute bit. A runc that is
// this binary (os.SameFile with /proc/self/exe) is never returned: a
// configured one is an error, a found one is skipped, and ErrSelf says so
// when every runc found was ours.
//
// # Running it
//
// Exec replaces the process with runc: argv unchanged, our environment,
// stdio and every inherited file descriptor. Run starts runc as a child
// with the same, waits for it and returns the status to exit with: runc's
// exit code, or 128+N when signal N killed it. While it waits, the
// signals sent to the wrapper go to runc: with foreground (a `run` without
// --detach) every signal but SIGCHLD, SIGURG, SIGKILL, SIGSTOP and the C
// library's 32 and 33, through os/signal; otherwise SIGHUP, SIGINT,
// SIGQUIT, SIGTERM, SIGUSR1 and SIGUSR2, through a C handler
// (forward_linux.c, with cgo) or else os/signal, and any other signal
// takes its default action on the wrapper. A signal that comes before
// runc has started is held and sent when it has (the C handler sends each
// held signal once, in the order of the numbers); one that comes after
// runc exited is dropped. The catching is never undone (the wrapper makes
// one Run per process). runc is reaped in two steps (waitid with WNOWAIT,
// forwarding stopped, then wait4), so that no signal reaches a process
// that took runc's pid. A wrapper killed once runc has started leaves
// runc to finish alone.
//
// # Features
//
// ProbeFeatures and ProbeSummary read the runtime's `features` document
// (runtime-spec features.json) from a cache in cacheDir (a create and
// `runc-userns features` pass stateDir), else run `<runtime> features`
// and cache its output:
//
//	features-<hash>.json  the runtime's `features` stdout, as printed
//	features-<hash>.sum   what a create needs of it, a field a line:
//
//	runc-userns features summary 1
//	nativeIdmap true
//	joinsUsernsFirst false
//	stdioChownedInside true
//	version 1.1.5
//
// <hash> is 16 hex digits, the first 8 bytes of SHA-256 over the runtime
// binary's "<path>\x00<inode>\x00<size>\x00<mtime in ns>": a replaced runc
// gets new files (the package removes no old ones). The files are written
// 0600 by oci.ReplaceFile (temporary file and rename, no fsync), the
// directory made 0711, best effort: a failed write only costs a probe next
// time. A cached file that does not parse (a summary not exactly in the
// form above) is ignored and the runtime probed again. A runtime whose
// `features` fails (runc < 1.1) is taken to have no native feature, and
// that guess is not cached. NativeIdmap is the document's
// linux.mountExtensions.idmap.enabled; Version its annotation
// org.opencontainers.runc.version, whose presence also sets
// StdioChownedInside; JoinsUsernsFirst a Version below 1.3. AmendFeatures
// adds "user" to linux.namespaces and sets mountExtensions.idmap.enabled,
// keeping every other field, for `runc-userns features`.
//
// # State
//
// ReadState decodes <root>/<id>/state.json (at most 16 MiB of it) without
// starting runc; its error wraps os.ErrNotExist when runc has no such
// container. It reads only what runc 1.1 to 1.5 all write alike:
// init_process_pid, init_process_start, config.labels (the spec's
// annotations as "key=value", with "bundle=<path>"; a key ends at the
// first "=" and of a repeated key the last wins, as runc reads them),
// config.namespaces[].type and .path, and config.cgroups.path and .parent.
// Nothing of runc's state is ever written.
//
// Kernel requirements: /proc mounted (/proc/self/exe), waitid(2) with
// WNOWAIT.
package runc
