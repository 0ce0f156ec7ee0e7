// Package pool hands out non-overlapping blocks of host IDs ("slots", 65536
// IDs by default) to owners: one per pod, shared by the pod's sandbox and
// app containers, so that each pod's user namespace maps its IDs 0-65535
// to host IDs no other pod has.
//
// # Guarantees
//
//   - No two owners ever hold a common host ID. Every call rebuilds the map
//     of used slots from the state file under an exclusive lock, and refuses
//     to allocate (ErrCorruptState) when the records overlap or are not
//     slots of the configured ranges, rather than guess around them.
//   - Allocate is idempotent per owner: a known owner gets its range back
//     (and the member is added once); one already allocated under another
//     runc root is ErrOwnerConflict. Slots are taken lowest first, so a
//     given history of calls always gives the same ranges.
//   - Leave and Release of an unknown owner succeed: the delete path runs
//     more than once (containerd calls delete again on cleanup). They, Join,
//     Get and List need no ranges (OpenExisting), so a changed or broken
//     range configuration never keeps a pod from returning its range; only
//     Allocate checks the records against the configured slots.
//   - Crash safety: the state file is replaced by writing pool.json.tmp,
//     fsyncing it and renaming it over pool.json. A reader, and the file
//     after a crash of the process or of the machine, sees the old state or
//     the new one, never a torn or empty file (the fsync before the rename
//     ensures that on a disk filesystem; on tmpfs, the default /run, fsync
//     costs nothing and the file goes with the reboot anyway). The
//     directory is not fsynced: that would only make the last rename
//     survive a power loss, and after a power loss every record is stale
//     (no container survives a reboot), so the previous state is as good
//     as the new one; on a disk stateDir it cost a second journal commit
//     per call. A process that dies before the rename leaves the old state
//     (the call never happened; its caller saw no success) and perhaps a
//     stale pool.json.tmp, which the next writer truncates. One that dies
//     after the rename has made the change even if it never returned: an
//     allocation nobody uses then stays until its owner is released (by the
//     next delete of its containers, or `runc-userns pool release OWNER`),
//     which wastes a slot but never lets two owners share one, or until
//     it is reclaimed (below). The lock dies with the process (the kernel
//     drops a flock with the last fd of its open file description), so a
//     crash never leaves the pool locked.
//
// # Reclaiming and rebuilding
//
// The pool cannot see containers (it imports nothing else of runc-userns);
// its caller passes Hooks. With Hooks.Alive set, Reclaim (`runc-userns
// pool gc`) takes back every allocation none of whose members is alive,
// and Allocate does the same before it reports ErrExhausted. With
// Hooks.Scan set, a state file that is garbage, truncated, or missing
// while RootsFile shows the pool was in use, is rebuilt from the records
// the containers carry themselves (the signed stamp on each spec, read
// through runc's state under every root in RootsFile and the caller's) and
// the claims of creates in flight; Hooks.Rebuilt is told, and logs it.
//
// The race to close is a create that has taken a range and not yet handed
// its container to runc: runc has no state for it, so it looks dead. The
// wrapper closes it with an in-flight marker per container, flock(2)ed
// (shared) before the create calls Allocate or Join, and kept locked until
// runc has the container: runc and runc's init inherit the descriptor, so
// it stays locked while runc create runs even if the wrapper is killed,
// until the container's process is exec'd, by which time runc's
// state.json exists. Alive answers true while the marker is locked, and
// only then looks at runc's state (state.json present and its init the
// same process: pid and start time), so a create that finishes between
// the two looks is seen by the second. Hooks.Claim writes the claim into
// the marker under the pool's lock before the state file records it,
// which is what lets a rebuild (which runs under the same lock) see every
// allocation whose container runc does not have yet. Every hook runs
// under the pool's exclusive lock, so no Allocate, Join or Leave runs
// between a hook's look at the world and the pool's change.
//
// # Validation
//
// Validate checks the pool's shape (one message per rule: whole slots, no
// overlap, below (uid_t)-1); CheckHost checks it against the host: no uid
// of /etc/passwd, gid of /etc/group or other owner's /etc/subuid or
// /etc/subgid range may fall in a pool range. New refuses a pool that fails
// Validate; its callers run CheckHost before allocating.
//
// # Sources
//
// ResolveRanges takes the operator's ranges, else the subordinate IDs of
// the subid user (getsubids, which also sees NSS backends such as SSSD, else
// /etc/subuid and /etc/subgid, which must agree), else the default: 1024
// slots from 2^31 (2147483648-2214592511). 2^31 is above every ID the
// usual tools hand out: useradd's users and groups (UID_MAX and GID_MAX
// 60000 in login.defs) and subordinate ranges (SUB_UID_MAX 600100000), and
// SSSD's default ID mapping (ldap_idmap_range_max 2000200000). 1024 slots
// is more pods than a node runs (kubelet's default limit is 110), with
// room for ranges still held by pods being torn down.
//
// # On-disk format
//
// The state directory (Config.StateDir, created 0711) holds:
//
//	pool.lock   empty; flock(2)ed for the length of each call
//	pool.json   the allocations, mode 0600
//	pool.json.tmp  only during a write (or after a crash during one)
//	pool.roots  every runc root allocated under, one a line (for a rebuild)
//
// pool.json, allocations sorted by host ID:
//
//	{
//	  "version": 1,
//	  "slotSize": 65536,
//	  "allocations": [
//	    {
//	      "owner": "8f2c61a7d3e4",
//	      "hostID": 2147483648,
//	      "size": 65536,
//	      "root": "/run/containerd/runc/k8s.io",
//	      "allocated": "2025-11-22T10:50:00Z",
//	      "members": ["8f2c61a7d3e4", "b0d9e1f2a3c4"]
//	    }
//	  ]
//	}
//
// A missing pool.json is an empty pool (unless pool.roots exists and a
// Scan hook is set: then it was lost and is rebuilt). Members are container IDs using
// the range; when the last one leaves, the record goes.
//
// # Requirements
//
// Linux flock(2) on the state directory's filesystem, which must be local
// to the node (tmpfs /run by default): the pool describes this node's host
// IDs and nothing else may share its lock. No other kernel feature is used.
//
// # Concurrency
//
// Every runc invocation is its own runc-userns process, so the contenders
// are processes, and the lock must be one the kernel holds for them: each
// call opens pool.lock anew and flocks it, LOCK_EX to change the pool,
// LOCK_SH to read it. flock locks belong to an open file description, not
// to a process, so two calls in one process (goroutines, or two Pools)
// exclude each other as two processes do; an fcntl lock would not (it is
// per process, and any close of the file drops it). Nothing is cached
// between calls: the state file is the only truth, read under the lock.
// The tests check this with processes, not goroutines, because that is
// what runs in production and what an in-process shortcut would get wrong.
package pool
