// Package config reads the operator's configuration file.
//
// # File
//
// The file is $RUNC_USERNS_CONFIG when that is set and not empty, else
// /etc/runc-userns/config.json (DefaultPath). It is read once per call,
// through oci.ReadRegular: opened O_NONBLOCK, refused unless a regular
// file, and refused above MaxSize (64 KiB). Nothing is ever written to
// it. It is one JSON object; keys unknown at any depth and anything after
// the object are refused:
//
//	{
//	  "runtime": "/usr/sbin/runc",
//	  "stateDir": "/run/runc-userns",
//	  "userns": {
//	    "mode": "annotation",
//	    "subidUser": "runc-userns",
//	    "ranges": [{"hostID": 2147483648, "size": 67108864}],
//	    "slotSize": 65536,
//	    "rootfsChown": false
//	  }
//	}
//
// Every key is optional. Defaults: runtime "" (internal/runc.Find
// searches PATH), stateDir /run/runc-userns, userns.mode "annotation",
// userns.subidUser "runc-userns", userns.ranges none (package pool then
// resolves them: the subid user's subordinate IDs, else its default),
// userns.slotSize 65536, userns.rootfsChown false.
//
// # Guarantees
//
//   - A Config returned by Load or Parse has every default filled in, a
//     userns.mode of "annotation", "always" or "off", an absolute stateDir
//     in one spelling (filepath.Clean), and a runtime that is empty or
//     absolute. Ranges and slotSize are not checked here: package pool
//     validates them where a pool is built.
//   - Config.Path is the file read, or "" when the defaults were used.
//
// # Errors
//
// A missing /etc/runc-userns/config.json means all defaults, with no
// error. Load returns nil and an error when the file cannot be read: a
// missing file named by $RUNC_USERNS_CONFIG, a file that is not regular,
// is too big or is unreadable. For a file that reads but does not check
// out (an unknown key or a bad mode, say) Load returns the error together
// with a lenient Config: the file's runtime and stateDir, everything else
// defaulted; nil instead when even those two cannot be had (the file is
// not a JSON object, either is not a string, or a path is relative).
// Package main acts on that per command:
//
//   - create and run fail on any error: no pod is set up under a
//     configuration the operator did not mean;
//   - every other runc command (delete, kill, state, ...) goes on with the
//     lenient Config and logs the error as a warning, so that a mistake in
//     the file never keeps the node from stopping and removing its pods;
//     with no Config at all it fails;
//   - the operator's verbs (pool ...) fail, and doctor reports the check
//     as failed.
//
// No kernel requirement.
package config
