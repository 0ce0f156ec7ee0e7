#!/usr/bin/env bash
# hostcheck.sh save FILE | check FILE: what the test suites could leave on
# the host, written down before (save) and compared after (check). make test
# runs it around the unit, fuzz and bats steps, so that a suite whose
# cleanup misses something fails CI rather than filling a node: a leftover
# test cgroup, mount, /run entry, container under runc's default root,
# netns, libcni cache entry or dir, runc init or shim process, temp dir of a
# suite, a mount point made for a suite's namespace, a changed
# /etc/subuid, a /dev node chowned by a runtime, a SysV shared memory
# segment, or a network link (a bridge or veth of a suite's pods, which
# belong in a network namespace of the suite's own).
#
# Only what the suites touch, and only state that nothing else on a quiet
# test machine changes: the processes listed are runc, runc-userns (and the
# runc init it starts, named after it), crun, conmon, containerd and its
# shims.
set -euo pipefail
shopt -s nullglob

# state: the host's state, one line per item, sorted within each section.
state() {
	# Not /run/mount: util-linux's libmount makes it (for its utab) on the
	# first mount(8) since boot, which on a fresh machine is a suite's.
	echo "# /run, but mount"
	ls -A /run | { grep -vx mount || true; } | sort
	echo "# /run/netns"
	ls -A /run/netns 2>/dev/null | sort || true
	echo "# /run/runc: runc's default root, which no suite may use"
	ls -A /run/runc 2>/dev/null | sort || true
	echo "# paths a suite makes, or binds over in a namespace of its own"
	local p
	for p in /etc/runc-userns /etc/containers/containers.conf.d /var/lib/containers /etc/subuid /etc/subgid; do
		if [ -f "$p" ]; then
			echo "$p $(stat -c '%u:%g %a' "$p") $(sha256sum <"$p" | cut -c1-16)"
		elif [ -e "$p" ]; then
			echo "$p $(stat -c '%F %u:%g %a' "$p")"
		fi
	done
	echo "# mount points"
	awk '{print $5}' /proc/self/mountinfo | sort
	echo "# cgroups: top level of v2, or of each v1 hierarchy"
	if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
		find /sys/fs/cgroup -mindepth 1 -maxdepth 1 -type d | sort
	else
		local h
		for h in /sys/fs/cgroup/*/; do
			find "$h" -mindepth 1 -maxdepth 1 -type d
		done | sort
	fi
	echo "# /var/lib/cni: libcni's cache"
	find /var/lib/cni 2>/dev/null | sort || true
	echo "# /tmp: suites' temp dirs"
	local tmp=(/tmp/runc-userns-* /tmp/ctrd-e2e.* /tmp/k8s-e2e.* /tmp/bats-run-*)
	[ ${#tmp[@]} = 0 ] || printf '%s\n' "${tmp[@]}" | sort
	echo "# SysV shared memory segments of the host: key, size, creator uid (critest's HostIpc specs make some)"
	awk 'NR > 1 {print $1, $4, $10}' /proc/sysvipc/shm | sort
	echo "# /dev nodes: owner and mode"
	stat -c '%n %u:%g %a' /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty
	echo "# network links of the host"
	ip -o link show | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | sort
	echo "# runtime processes"
	ps -eo args= | awk '$1 ~ /(^|\/)(runc|runc-userns|crun|conmon|containerd|containerd-shim[^ ]*)$/' | sort | uniq -c
}

case "${1:-}:${2:-}" in
save:?*)
	state >"$2"
	;;
check:?*)
	[ -f "$2" ] || { echo "hostcheck: no saved state at $2: run $0 save $2 first" >&2; exit 2; }
	if ! diff -u --label "before the tests ($2)" --label "after the tests" "$2" <(state) >&2; then
		echo "hostcheck: the tests left the host changed (lines with + are new, - are gone): fix the cleanup of the suite at fault" >&2
		exit 1
	fi
	echo "hostcheck: host as before the tests"
	;;
*)
	echo "usage: $0 save FILE | check FILE" >&2
	exit 2
	;;
esac
