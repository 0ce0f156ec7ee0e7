// Package admin is runc-userns's own command line, the operator's verbs
// (`pool ls`, `pool gc`, `pool release`, `doctor`), and the hooks that let
// the pool see the containers that use it (PoolHooks), which the create
// and delete paths (package internal/create) set too. runc's argv never
// reaches it: main dispatches here only when the first argument is one of
// our verbs (IsVerb), and Run parses that command line with urfave/cli.
// It is plumbing for package main and internal/create, not a domain
// package: it imports pool, idmap, libuserns and nsjoin, and
// internal/config, internal/oci, internal/runc and internal/state. It configures no logging: the verbs
// warn on stderr through a logger of their own, and the hooks log to the
// logger their caller passes.
//
// Every verb reads the operator's config (config.Load: the
// RUNC_USERNS_CONFIG file, else the default path, else defaults) and works
// on its stateDir; its layout is package state's (internal/state/doc.go),
// the pool's files are package pool's (pool/doc.go). Each prints what it
// did on stdout, and an error as one line "runc-userns: ..." on stderr
// with exit status 1.
//
// # pool ls [--json]
//
// Lists the allocations, one per pod, sorted by host ID: a table, or with
// --json an array of pool.Allocation (an empty pool is [], not null). It
// only reads: the pool's shared lock, the records (or an older release's
// pool.json, as it is), never creating a file or directory; without hooks
// a damaged state is reported, not rebuilt.
//
// # pool gc
//
// Reclaims the range of every pod none of whose containers is alive: a
// member is alive while a create of it holds its in-flight marker, or
// while runc has its state and the init process it names (pid and start
// time) still runs; an unreadable state counts as alive. For each
// reclaimed pod it removes, under each member's marker lock, the
// member's staging mounts and directories and PID-join pins and the
// marker, then the pod's pinned user namespace (pods/<owner>), and then
// the record. A state that is damaged, or lost while pool.roots shows the
// pool in use, is rebuilt first from the live containers' signed stamps
// and the claims of creates in flight (PoolHooks' Scan), with a warning.
// It then drops, under the pool's exclusive lock, the pinned user
// namespace of every pod that holds no range, and removes the in-flight
// markers no create holds. Each step goes on past a pod it cannot clean:
// the others are cleaned, the failures are joined in one error (exit 1)
// after the summary line. It is idempotent, and never frees a range a
// live or starting container uses.
//
// # pool release [--force] OWNER
//
// Removes OWNER's record and unpins its user namespace. Refused (exit 1,
// "... or use --force") while a container of OWNER is alive, by the same
// test as pool gc; --force releases it anyway, and those containers keep
// running on host IDs the next pod may get. An unknown OWNER is success.
// Unlike gc it leaves the containers' staging directories to their
// deletes.
//
// # doctor [--json] [PATH...]
//
// Runs a list of named checks and prints one line each (ok, warn or FAIL,
// with the rule in the detail and what to do in a hint), or with --json
// {"ok": bool, "checks": [{"name", "status", "detail", "hint"}]}. Only a
// fail makes it exit 1; a check that needs what an earlier one failed to
// find (the config, the runtime) is left out. It changes nothing on the
// host: it reads the config, /proc/sys/user/max_user_namespaces and the
// pool's records under the shared lock (creating no lock file, no
// directory), runs `<runtime> --version` and `<runtime> features` (into a
// temporary directory it removes, not stateDir's cache), and probes
// idmapped mounts on clones it never attaches.
//
// Kernel requirements of its probes: uname(2); user namespaces
// (CONFIG_USER_NS, user.max_user_namespaces > 0), one of which it creates
// mapping 0-65535 to the pool's first slot (writing those maps needs
// CAP_SETUID and CAP_SETGID, so doctor runs as root as runc-userns does);
// open_tree(2) with OPEN_TREE_CLONE and mount_setattr(2) with
// MOUNT_ATTR_IDMAP (Linux >= 5.12; on tmpfs >= 6.3), tried on stateDir's
// filesystem (or that of its nearest existing ancestor), on / and on each
// PATH. An older kernel fails the "kernel" check, and the idmap probes
// say which filesystems cannot be idmapped.
//
// # Pool hooks
//
// PoolHooks gives the pool its view of the containers (package pool
// imports nothing of ours): Alive (the liveness test above), Scan (the
// signed stamps on the specs of the live containers under each runc root,
// verified with stateDir's stamp.key, plus the claims in busy in-flight
// markers), Rebuilt (a warning) and Reclaimed (what pool gc removes per
// pod, above; a failure keeps the range, with a warning). Every hook runs
// under the pool's exclusive lock. OpenPool opens the pool for allocation,
// its ranges resolved from the config and checked against the host's
// users, groups and subordinate IDs. RemoveLeftovers and PoolExists serve
// the delete path as they serve reclaim.
package admin
