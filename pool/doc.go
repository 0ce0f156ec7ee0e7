// Package pool hands out non-overlapping blocks of host IDs ("slots", 65536
// IDs by default) to owners: one per pod, shared by the pod's sandbox and
// app containers, so that each pod's user namespace maps its IDs 0-65535
// to host IDs no other pod has.
//
// # Guarantees
//
//   - No two owners ever hold a common host ID. Every call rebuilds the map
//     of used slots from the records' names under an exclusive lock, and
//     refuses to allocate (ErrCorruptState) when the records it reads
//     overlap or are not slots of the configured ranges, rather than guess
//     around them.
//   - Allocate is idempotent per owner: a known owner gets its range back
//     (and the member is added once); one already allocated under another
//     runc root is ErrOwnerConflict. Slots are taken lowest first, so a
//     given history of calls always gives the same ranges.
//   - Leave and Release of an unknown owner succeed: the delete path runs
//     more than once (containerd calls delete again on cleanup). They, Join,
//     Get and List need no ranges (OpenExisting), so a changed or broken
//     range configuration never keeps a pod from returning its range; only
//     Allocate checks the records against the configured slots.
//   - Crash safety: a record is replaced by writing a temporary file next
//     to it and renaming it over; a record goes by unlink. A reader, and
//     the directory after a crash of the process, sees each record old or
//     new, never torn or empty. A process that dies before the rename or
//     unlink leaves the old record (the call never happened; its caller
//     saw no success) and perhaps a stale temporary file, which the next
//     call that takes the exclusive lock removes. One that dies after it
//     has made the change even if it never returned: an allocation nobody
//     uses then stays until its owner is released (by the next delete of
//     its containers, or `runc-userns pool release OWNER`), which wastes a
//     slot but never lets two owners share one, or until it is reclaimed
//     (below). Every call writes or removes at most one record, except a
//     rebuild or conversion (below), which writes every record before it
//     removes anything, so a crash leaves extra records, never a live
//     allocation missing. The lock dies with the process (the kernel drops
//     a flock with the last fd of its open file description), so a crash
//     never leaves the pool locked.
//
// # Durability
//
// Nothing is fsynced, neither a record nor the directory. On tmpfs (the
// default /run) there is nothing to sync to, and the state goes with a
// reboot. On a disk stateDir, a crash of the machine (not of the process)
// can lose the last changes (a new record missing, a removed one back) or,
// with the page cache written out of order, leave a record empty or torn.
// That costs no safety: after a machine crash no container survives, so
// every record is stale and the old state is as good as the new one; a
// torn record is a corrupt record, which the next create or `pool gc`
// rebuilds from the containers' own records (none, after a reboot), and
// reclaiming (below) frees stale ranges. A file fsync and a directory
// fsync would each cost a journal commit per write (the file fsync alone
// was ~0.75 ms of each call on ext4 here) for no guarantee the pool needs.
//
// # Reclaiming and rebuilding
//
// The pool cannot see containers (it imports nothing else of runc-userns);
// its caller passes Hooks. With Hooks.Alive set, Reclaim (`runc-userns
// pool gc`) takes back every allocation none of whose members is alive,
// and Allocate does the same before it reports ErrExhausted. With
// Hooks.Scan set, a state that is damaged (a record, or a version 1 state
// file, that is garbage, truncated or breaks a rule below), or RecordDir
// missing while RootsFile shows the pool was in use, is rebuilt from the
// records the containers carry themselves (the signed stamp on each spec,
// read through runc's state under every root in RootsFile and the
// caller's) and the claims of creates in flight: RecordDir is rewritten
// whole, and Hooks.Rebuilt is told, and logs it. Damage is found where a
// call reads: every call checks all the names, and the records it reads
// (see "On-disk format"); List, OwnerOf, Reclaim and so `pool ls`, `pool
// gc` and doctor read them all.
//
// The race to close is a create that has taken a range and not yet handed
// its container to runc: runc has no state for it, so it looks dead. The
// wrapper closes it with an in-flight marker per container, flock(2)ed
// (exclusively, without waiting: a second create of the container, or one
// of a container runc has, changes nothing) before the create takes
// anything, and kept locked until
// runc has the container: runc and runc's init inherit the descriptor, so
// it stays locked while runc create runs even if the wrapper is killed,
// until the container's process is exec'd, by which time runc's
// state.json exists. Alive answers true while the marker is locked, and
// only then looks at runc's state (state.json present and its init the
// same process: pid and start time), so a create that finishes between
// the two looks is seen by the second. Hooks.Claim writes the claim into
// the marker under the pool's lock before the pool records it,
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
//	pool.d/     one file per allocation, mode 0600 (the directory 0700)
//	pool.roots  every runc root allocated under, one a line (for a rebuild)
//
// A record's file name is its host ID in decimal, '-', and its owner
// (2147483648-8f2c61a7d3e4), so that a readdir alone gives the used slots
// and which file is whose: Allocate reads the names and one record (its
// owner's, or for a new owner the lowest one, to check the slot size);
// Join, Leave, Release and Get read their owner's record only; each writes
// or removes one file. The cost of a call hardly grows with the number of
// ranges held. Owners are runc container IDs (letters, digits, _ + . -,
// not "." or "..") of at most 239 bytes, so that the name, even as a
// temporary name, is a plain file name within NAME_MAX; the pool refuses
// any other owner. The content is the allocation as JSON
// on one line, newline-terminated:
//
//	{"owner":"8f2c61a7d3e4","hostID":2147483648,"size":65536,"root":"/run/containerd/runc/k8s.io","allocated":"2025-11-22T10:50:00Z","members":["8f2c61a7d3e4","b0d9e1f2a3c4"]}
//
// Members are container IDs using the range; when the last one leaves,
// the record goes. A record is being written as .<name>.tmp (a leading
// dot, which no record name has: "<name>.tmp" would be the record of an
// owner ending in ".tmp"); such files are skipped by readers. Any other
// name that is not a record's, content that does not decode, disagrees
// with its name or breaks a rule (owner, size, IDs below (uid_t)-1,
// members neither empty nor twice), two records of one owner or of one
// host ID, and records that overlap, are damage (ErrCorruptState, see
// above).
//
// The records of a pool share one size: the slot size they were allocated
// with. Allocate only adds records of the configured slot size after
// reading one existing record and finding that size, and a rebuild or
// conversion writes records of one size, so a pool.d with records of a
// size other than the configured slot size is one whose slot size was
// changed while ranges were held: its records read, join, leave and
// release as usual, but Allocate refuses (ErrCorruptState, "not a slot of
// the pool") until they are released or the slot size is restored, as it
// refuses records the configured ranges no longer hold. Records of
// different sizes, which none of our writers makes, are damage.
//
// A missing pool.d is an empty pool, unless pool.roots exists and a Scan
// hook is set: then it was lost and is rebuilt.
//
// # Earlier releases
//
// Releases before pool.d kept every allocation in pool.json (version 1),
// which each call decoded and rewrote whole:
//
//	{
//	  "version": 1,
//	  "slotSize": 65536,
//	  "allocations": [
//	    {"owner": "8f2c61a7d3e4", "hostID": 2147483648, "size": 65536, ...}
//	  ]
//	}
//
// Upgrade: while pool.json exists it is the state. Readers (List, Get,
// OwnerOf: `pool ls`, doctor) read it as it is; the first call that takes
// the exclusive lock converts it: pool.d is made to hold exactly its
// records (written first, then any other file in pool.d removed), then
// pool.json is removed. A crash in between leaves pool.json, and the next
// call converts again, the same way. A pool.json that does not parse is
// damage, rebuilt from Scan like a damaged record (which removes it).
//
// Downgrade: an older binary looks for pool.json only. It finds none and,
// since pool.roots exists, its next create or `pool gc` (any call with a
// Scan hook that takes the exclusive lock) rebuilds pool.json from the
// live containers' stamps, so no live range is handed out twice; pool.d is
// left as it is, and replaced by pool.json's records on the next upgrade.
// Until that rebuild its `pool ls` shows an empty pool, and its delete
// skips the pool altogether (it returns early when pool.json is missing):
// a pod whose last container is deleted then is not in the rebuilt
// pool.json, so its range is free, but its pinned user namespace under
// pods/<owner> stays until `runc-userns pool release OWNER`. Delete pods,
// or run `pool gc` with the new binary, before a downgrade.
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
// between calls: the records are the only truth, read under the lock.
// The tests check this with processes, not goroutines, because that is
// what runs in production and what an in-process shortcut would get wrong.
package pool
