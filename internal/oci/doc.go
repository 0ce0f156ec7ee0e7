// Package oci is what the wrapper reads of runc's command line and how it
// edits a bundle's config.json: argv scanning, the spec and its atomic
// rewrite, the runc-userns.io/ annotations, and the signed stamp. It
// imports no other package of runc-userns.
//
// # Argv
//
// Parse never changes Args: the real runc gets them byte for byte. Flags
// are read as runc's urfave/cli v1 reads them: "-x" or "--x"; a value flag
// as "--x v" or "--x=v"; a bool flag bare or as "--x=v", true for 1, t, T,
// true, TRUE or True and false for anything else. The global flags are
// runc's (debug, log, log-format, root, criu, systemd-cgroup, rootless,
// help/h, version/v); "--" ends them. An unknown global flag, or a value
// flag with no value left, ends the scan with no Command: the call goes to
// runc untouched, which reports it in its own words. Only create, run,
// delete and exec have their flags scanned (runc 1.1 to 1.5's sets; exec
// stops at its first operand, the rest is the command); Scanned is set
// only when every flag is known, there is exactly one operand (the ID) and
// no --help. RuncRoot is runc's root without --root: /run/runc, or
// $XDG_RUNTIME_DIR/runc where runc honours XDG_RUNTIME_DIR. ValidateID is
// runc's rule (1 to 1024 bytes of letters, digits, _ + - ., not "." or
// "..") and is applied before an ID names any file of ours.
//
// # Spec
//
// Load reads <bundle>/config.json through ReadRegular (an O_NONBLOCK open,
// regular files only, at most 16 MiB). It refuses, with ErrBadSpec, bad
// JSON (naming line and column), a wrong type, data after the object, and
// an annotation key given twice or two members that fold to "annotations"
// (tools would disagree on which value counts). Unknown fields survive:
// the members the wrapper does not read (process, hooks, linux.resources,
// linux.seccomp, ...: wire.go) are not decoded and go back as the same
// JSON values, and members this runtime-spec version does not know, at any
// depth, are merged back into the edited spec (keys matched without case,
// as encoding/json matches them; numbers kept as json.Number). Modifiers
// must edit array elements in place or append. Flush writes nothing when
// no modifier changed the spec, so config.json stays byte for byte;
// otherwise the file is compact JSON (the original's layout and key order
// are not kept), written by WriteFileAtomic.
//
// WriteFileAtomic writes .<name>.tmp-<random> beside the file, sets the
// given permission bits (the owner is the writer's), fsyncs it and renames
// it over the file: a reader, or the file after a crash, has the old or
// the new contents. The directory is not fsynced. ReplaceFile is the same
// without the fsync, for files a reboot makes meaningless anyway.
// RemoveTemps removes the .<name>.tmp-* files of writers killed before
// their rename.
//
// # Annotations
//
// ParseRequest reads the keys under runc-userns.io/:
//
//	userns         "auto" (a range from the pool) or "host" (none), trimmed
//	pid-namespace  "container:<ID>", kept as given (package nsjoin parses it)
//	idmap-skip     container paths, comma-separated, trimmed, empties dropped
//	idmap-skipped  written by runc-userns, informational; ignored on read
//	stamp          the Stamp (below)
//
// Another userns value is refused. Any other key under the prefix is
// listed, sorted, in Request.Unknown for the caller to report. A value
// under the prefix must be valid UTF-8 of at most 4096 bytes (the stamp:
// 1 MiB), else ErrBadAnnotation names the container and the key.
//
// A container's pod (PodOf) is read from containerd's
// io.kubernetes.cri.container-type and io.kubernetes.cri.sandbox-id, else
// from CRI-O's io.kubernetes.cri-o.ContainerType and
// io.kubernetes.cri-o.SandboxID; without them it is its own pod.
// CheckPodIdentity refuses both sets at once, or one present but empty.
//
// # Stamp
//
// The stamp annotation is the Stamp as compact JSON ({"v":2,"owner":...,
// "id":...,"root":...,"bundle":...,"stateDir":...,"hostID":...,"size":...,
// "mac":...}, optional fields omitted when empty); DecodeStamp refuses any
// "v" but 2 and 1 (an earlier release's, without "id" and "bundle"). "mac"
// is the hex HMAC-SHA256, under the node's key, of the same encoding with
// mac left out; Verify compares in constant time and refuses an empty mac
// (ErrForgedStamp). The MAC covers the container the stamp was written for
// (its ID, runc root and bundle), and Verify checks it against a Binding:
// a create, the bundle (the stamp must be the one written into that very
// config.json); a delete, exec or rebuild, the ID and runc root whose
// runc state carries it. A stamp copied onto another container does not
// verify (ErrCopiedStamp); a create takes no version 1 stamp
// (ErrUnboundStamp), which the rest take by their MAC, for containers an
// earlier release created. The key is <stateDir>/stamp.key: 32 random bytes in a
// root-owned 0600 regular file, opened O_NOFOLLOW and refused in any other
// shape. StampKey(dir, true) creates it (and stateDir, 0711): written to
// .stamp.key-<random>, fsynced, then link(2)ed into place, so that of two
// racing creators the first key wins. It lives as long as stateDir.
//
// No kernel requirement beyond link(2) and rename(2) on the filesystems
// of stateDir and the bundle.
package oci
