#!/usr/bin/env bash
# images.sh DIR GO: critest's images, built here as busybox stand-ins under
# the exact names critest v1.34 pulls (pkg/validate/consts.go, pkg/framework,
# security_context_linux.go, multi_container_linux.go), each an OCI image
# layout in DIR/<n>/ for tests/critest/registry to serve. Each stand-in has
# what critest reads from it and nothing else:
#
#   busybox:1.29-2          busybox's applets as hard links, pgrep, ipcs, its /etc/passwd
#                           and /etc/group (RunAsUserName: nobody)
#   nginx:1.14-2            /usr/sbin/nginx: /var/run/nginx.pid, process name nginx,
#                           "master process" in its command line, HTTP 200 on :80
#   hostnet-nginx-amd64     the same on :12003 (a pod on the host's network)
#   httpd:2.4.39-4          HTTP 200 on :80, "httpd" in its log
#   nonewprivs:1.3          a setuid-root program printing "Effective uid: N"
#   test-image-user-*       User 1002, www-data, 1003:users, www-data:www-data
#   test-image-predefined-group  User 1000, in group 50000 in /etc/group
#   test-image-latest, test-image-tag:test, test-image-tag:all,
#   test-image-1/2/3:latest three different images, test-image-tags:1/2/3 one image
#
# And localhost/pause:test, the sandbox (tail -f /dev/null).
#
# Not built: test-image-digest@sha256:9700f9a2..., which names the digest
# of the upstream manifest; no image built here can have it (critest.bats
# skips the one spec that pulls it).
set -euo pipefail
dir=$1 go=$2
here=$(cd "$(dirname "$0")" && pwd)
mkimage=$here/../../hack/mkimage.sh
k8s=registry.k8s.io/e2e-test-images
cri=gcr.io/k8s-staging-cri-tools
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$dir"

# etc DIR [PASSWD-LINE GROUP-LINE]: busybox:1.29's users and groups in
# DIR/etc, plus one of each.
etc() {
	mkdir -p "$1/etc"
	cat >"$1/etc/passwd" <<-EOT
		root:x:0:0:root:/root:/bin/sh
		daemon:x:1:1:daemon:/usr/sbin:/bin/false
		bin:x:2:2:bin:/bin:/bin/false
		sys:x:3:3:sys:/dev:/bin/false
		sync:x:4:100:sync:/bin:/bin/sync
		mail:x:8:8:mail:/var/spool/mail:/bin/false
		www-data:x:33:33:www-data:/var/www:/bin/false
		operator:x:37:37:Operator:/var:/bin/false
		nobody:x:65534:65534:nobody:/home:/bin/false
	EOT
	cat >"$1/etc/group" <<-EOT
		root:x:0:
		daemon:x:1:
		bin:x:2:
		sys:x:3:
		adm:x:4:
		tty:x:5:
		mail:x:8:
		www-data:x:33:
		operator:x:37:
		users:x:100:
		nogroup:x:65534:
	EOT
	if [ $# -gt 1 ]; then
		echo "$2" >>"$1/etc/passwd"
		echo "$3" >>"$1/etc/group"
	fi
}

# image N NAMES [--user USER] CMD...: build DIR/N (a layout), $work/N
# copied over its busybox rootfs.
image() {
	local n=$1 names=$2 user=()
	shift 2
	if [ "$1" = --user ]; then
		user=(--user "$2")
		shift 2
	fi
	[ -d "$work/$n" ] || etc "$work/$n"
	"$mkimage" --tree "$work/$n" "${user[@]}" "$work/$n.tar" "$names" "$@"
	rm -rf "${dir:?}/$n"
	mkdir "$dir/$n"
	tar -C "$dir/$n" -xf "$work/$n.tar"
}

# busybox: as in busybox:1.29, the applets are hard links of one binary
# (MaskedPaths masks /bin/ls, which must not mask /bin/busybox with it),
# and pgrep and ipcs are there, which Debian's busybox-static leaves out:
# two scripts, enough for critest's `pgrep sleep` and `ipcs -m`.
etc "$work/busybox"
mkdir -p "$work/busybox/bin"
cp /bin/busybox "$work/busybox/bin/busybox"
for a in $(/bin/busybox --list); do
	[ "$a" = busybox ] || ln "$work/busybox/bin/busybox" "$work/busybox/bin/$a"
done
cat >"$work/busybox/bin/pgrep" <<-'EOT'
	#!/bin/sh
	# pgrep NAME: the PIDs of the processes named NAME.
	rc=1
	for d in /proc/[0-9]*; do
		if [ "$(cat "$d/comm" 2>/dev/null)" = "$1" ]; then echo "${d#/proc/}"; rc=0; fi
	done
	exit $rc
EOT
cat >"$work/busybox/bin/ipcs" <<-'EOT'
	#!/bin/sh
	# ipcs -m: the IPC namespace's shared memory segments (key, shmid, ...).
	cat /proc/sysvipc/shm
EOT
chmod 0755 "$work/busybox/bin/pgrep" "$work/busybox/bin/ipcs"
image busybox "$k8s/busybox:1.29-2" sh

# The pod sandbox, under containerd.bash's name: critest's specs share the
# pod's PID namespace and count `sleep` processes, which the suite's usual
# stand-in (sleep infinity) would be. critest.bats imports DIR/pause.tar.
image pause localhost/pause:test tail -f /dev/null
cp "$work/pause.tar" "$dir/pause.tar"

# nginx: a shell script named nginx, so that its process is "nginx" to
# pidof (the kernel names a script's process after the script), whose
# command line carries "master process" as nginx's own title does.
etc "$work/nginx"
mkdir -p "$work/nginx/usr/sbin" "$work/nginx/var/run" "$work/nginx/usr/share/nginx/html"
cat >"$work/nginx/usr/sbin/nginx" <<-'EOT'
	#!/bin/sh
	# critest's stand-in for nginx: nginx [TITLE] [PORT]. The shell stays
	# nginx's "master"; busybox httpd serves.
	echo $$ >/var/run/nginx.pid
	httpd -f -p "${2:-80}" -h /usr/share/nginx/html &
	child=$!
	trap 'kill $child; exit 0' TERM INT
	wait
EOT
chmod 0755 "$work/nginx/usr/sbin/nginx"
echo '<title>Welcome to nginx!</title>' >"$work/nginx/usr/share/nginx/html/index.html"
cp -a "$work/nginx" "$work/hostnet-nginx"
image nginx "$k8s/nginx:1.14-2" nginx 'master process'
image hostnet-nginx "$cri/hostnet-nginx-amd64:latest" nginx 'master process' 12003

etc "$work/httpd"
mkdir -p "$work/httpd/usr/local/bin" "$work/httpd/usr/local/apache2/htdocs"
cat >"$work/httpd/usr/local/bin/httpd-foreground" <<-'EOT'
	#!/bin/sh
	# critest's stand-in for httpd: busybox httpd on :80, logging.
	echo "httpd: serving /usr/local/apache2/htdocs on :80"
	httpd -f -v -p 80 -h /usr/local/apache2/htdocs &
	child=$!
	trap 'kill $child; exit 0' TERM INT
	wait
EOT
chmod 0755 "$work/httpd/usr/local/bin/httpd-foreground"
echo '<html><body><h1>It works!</h1></body></html>' >"$work/httpd/usr/local/apache2/htdocs/index.html"
image httpd "$k8s/httpd:2.4.39-4" httpd-foreground

etc "$work/nonewprivs"
mkdir -p "$work/nonewprivs/usr/local/bin"
(cd "$here" && CGO_ENABLED=0 "$go" build -trimpath -o "$work/nonewprivs/usr/local/bin/nnp" ./nnp)
chmod 4755 "$work/nonewprivs/usr/local/bin/nnp"
image nonewprivs "$k8s/nonewprivs:1.3" /usr/local/bin/nnp

image user-uid "$cri/test-image-user-uid:latest" --user 1002 sh
image user-username "$cri/test-image-user-username:latest" --user www-data sh
image user-uid-group "$cri/test-image-user-uid-group:latest" --user 1003:users sh
image user-username-group "$cri/test-image-user-username-group:latest" --user www-data:www-data sh
etc "$work/predefined-group" 'default-user:x:1000:1000::/home/default-user:/bin/sh' \
	$'default-user:x:1000:\ngroup-defined-in-image:x:50000:default-user'
image predefined-group "$cri/test-image-predefined-group:latest" --user 1000 sh

# Different commands make different images (config, so manifest, digests).
image latest "$cri/test-image-latest:latest" sh -c latest
image tag-test "$cri/test-image-tag:test" sh -c tag-test
image tag-all "$cri/test-image-tag:all" sh -c tag-all
for i in 1 2 3; do
	image "image-$i" "$cri/test-image-$i:latest" sh -c "image-$i"
done
image tags "$cri/test-image-tags:1,$cri/test-image-tags:2,$cri/test-image-tags:3" sh -c tags
