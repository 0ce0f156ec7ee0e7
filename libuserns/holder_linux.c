//go:build cgo

// The user namespace holder: see holder_linux.go.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "holder_linux.h"

#define HOLDER_STACK (64 * 1024)

// holder runs in the child, on its own stack but in our address space
// (CLONE_VM): nothing but raw system calls, and no libc call that could
// set errno, which lives in the parent thread's TLS. It drops its copy of
// the pipe's write end, then waits for EOF: the parent closes its end when
// it is done, or the kernel does when the parent dies. arg points at the
// pipe's fds, copied to the bottom of the child's stack mapping, which is
// the child's until it is reaped: the parent does not wait for the child,
// and a frame of the parent's stack may be overwritten by the time the
// child reads it (a holder once blocked for good on its own write end).
static int holder(void *arg)
{
	const int *p = arg;
	char c;

	syscall(SYS_close, p[1]);
	while (syscall(SYS_read, p[0], &c, 1) > 0)
		;
	syscall(SYS_exit_group, 0);
	return 0;
}

static int write_map(pid_t pid, const char *file, const char *map, size_t len)
{
	char path[64];
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	/*
	 * The kernel takes a map in one write or refuses it; a short write is
	 * a refusal with no errno of its own, so clear the stale one first.
	 */
	errno = 0;
	if (write(fd, map, len) != (ssize_t)len)
		err = errno ? errno : EIO;
	close(fd);
	return err;
}

// open_ns opens /proc/<pid>/ns/<name>: an fd, or -1 with errno set.
static int open_ns(pid_t pid, const char *name)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, name);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int runc_userns_new(const char *uid_map, size_t uid_len, const char *gid_map, size_t gid_len, int ipc_uts,
		    int *ipc_fd, int *uts_fd, int *step, int *holder_pid, void **holder_stack)
{
	sigset_t all, old;
	int p[2], ns = -1, ipc = -1, uts = -1, err = 0, flags = CLONE_VM | CLONE_NEWUSER;
	void *stack;
	pid_t pid;

	*ipc_fd = -1;
	*uts_fd = -1;
	// With CLONE_NEWUSER in the same call the kernel makes the user
	// namespace first and has it own the others (clone(2)): the pod's
	// root holds CAP_SYS_ADMIN over them, so runc may join them from
	// inside the pod's user namespace, mount mqueue and set the hostname.
	if (ipc_uts)
		flags |= CLONE_NEWIPC | CLONE_NEWUTS;
	*step = HOLDER_STEP_CLONE;
	*holder_pid = 0;
	*holder_stack = NULL;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	stack = mmap(NULL, HOLDER_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED) {
		err = errno;
		close(p[0]);
		close(p[1]);
		return -err;
	}
	// The child's copy of the pipe's fds (see holder).
	memcpy(stack, p, sizeof(p));
	// The child must never run one of Go's signal handlers (they would
	// run on our memory, off any Go thread): it starts with every signal
	// blocked, SIGKILL aside.
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	// Exit signal 0: nobody is told when it exits; it is reaped by PID
	// with __WALL (runc_userns_reap).
	pid = clone(holder, (char *)stack + HOLDER_STACK, flags, stack);
	if (pid < 0)
		err = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		munmap(stack, HOLDER_STACK);
		close(p[0]);
		close(p[1]);
		return -err;
	}
	// The child is ours and not yet reaped: /proc/<pid> is that child.
	*step = HOLDER_STEP_UID_MAP;
	err = write_map(pid, "uid_map", uid_map, uid_len);
	if (!err) {
		*step = HOLDER_STEP_GID_MAP;
		err = write_map(pid, "gid_map", gid_map, gid_len);
	}
	if (!err) {
		*step = HOLDER_STEP_OPEN;
		ns = open_ns(pid, "user");
		if (ns < 0)
			err = errno;
	}
	if (!err && ipc_uts) {
		*step = HOLDER_STEP_OPEN_IPC;
		ipc = open_ns(pid, "ipc");
		if (ipc < 0)
			err = errno;
	}
	if (!err && ipc_uts) {
		*step = HOLDER_STEP_OPEN_UTS;
		uts = open_ns(pid, "uts");
		if (uts < 0)
			err = errno;
	}
	if (err) {
		if (ns >= 0)
			close(ns);
		if (ipc >= 0)
			close(ipc);
		ns = -1;
	} else {
		*ipc_fd = ipc;
		*uts_fd = uts;
	}
	// The child has its own copy of both ends (no CLONE_FILES) and has
	// dropped or will drop its write end: with ours closed it reads EOF
	// and exits.
	close(p[1]);
	close(p[0]);
	*holder_pid = pid;
	*holder_stack = stack;
	return err ? -err : ns;
}

// joiner runs in the child of runc_userns_maps, like holder: it joins the
// user namespace whose fd a[4] is, reports setns's errno (0: joined) as
// one int on the status pipe a[3], and waits for EOF on a[0]. errno is
// the parent thread's (the child shares its TLS): the parent is blocked
// in read(2) on the status pipe until the child has written, and looks at
// errno only after a call of its own failed.
static int joiner(void *arg)
{
	const int *a = arg;
	int err = 0;
	char c;

	syscall(SYS_close, a[1]);
	syscall(SYS_close, a[2]);
	if (syscall(SYS_setns, a[4], CLONE_NEWUSER) < 0)
		err = errno ? errno : EINVAL;
	syscall(SYS_write, a[3], &err, sizeof(err));
	syscall(SYS_close, a[3]);
	while (syscall(SYS_read, a[0], &c, 1) > 0)
		;
	syscall(SYS_exit_group, 0);
	return 0;
}

// read_map reads /proc/<pid>/<file> into buf (cap bytes at most): its
// length, or -errno. A map that fills buf is refused (E2BIG).
static ssize_t read_map(pid_t pid, const char *file, char *buf, size_t cap)
{
	char path[64];
	size_t len = 0;
	ssize_t n;
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len < cap) {
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			break;
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	if (err)
		return -err;
	if (len == cap)
		return -E2BIG;
	return len;
}

int runc_userns_maps(int ns, char *uid_buf, size_t *uid_len, char *gid_buf, size_t *gid_len, size_t cap, int *step,
		     int *holder_pid, void **holder_stack)
{
	sigset_t all, old;
	int a[5], st[2], joined = -1, err = 0;
	char path[64];
	struct stat want, got;
	void *stack;
	ssize_t n;
	pid_t pid;

	*step = MAPS_STEP_CLONE;
	*holder_pid = 0;
	*holder_stack = NULL;
	if (fstat(ns, &want) < 0)
		return -errno;
	if (pipe2(a, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(st, O_CLOEXEC) < 0) {
		err = errno;
		close(a[0]);
		close(a[1]);
		return -err;
	}
	a[2] = st[0];
	a[3] = st[1];
	a[4] = ns;
	stack = mmap(NULL, HOLDER_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED) {
		err = errno;
		goto out;
	}
	// The child's copy of the fds, at the bottom of its stack (see holder).
	memcpy(stack, a, sizeof(a));
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	// No CLONE_FS: setns into a user namespace refuses a caller that
	// shares its filesystem attributes (EINVAL); nor CLONE_THREAD.
	pid = clone(joiner, (char *)stack + HOLDER_STACK, CLONE_VM, stack);
	if (pid < 0)
		err = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		munmap(stack, HOLDER_STACK);
		goto out;
	}
	*holder_pid = pid;
	*holder_stack = stack;
	// Our copy of the status pipe's write end goes, so that a child that
	// dies before it writes gives EOF rather than a hang.
	close(st[1]);
	st[1] = -1;
	*step = MAPS_STEP_SETNS;
	do
		n = read(st[0], &joined, sizeof(joined));
	while (n < 0 && errno == EINTR);
	if (n != sizeof(joined)) {
		err = n < 0 ? errno : ECHILD;
		goto out;
	}
	if (joined != 0) {
		err = joined;
		goto out;
	}
	// The child is ours and not yet reaped: /proc/<pid> is that child, and
	// its user namespace the one it joined, proven by inode. The maps are
	// printed relative to the reader's user namespace: ours.
	*step = MAPS_STEP_CHECK;
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	if (stat(path, &got) < 0) {
		err = errno;
		goto out;
	}
	if (got.st_dev != want.st_dev || got.st_ino != want.st_ino) {
		err = ESRCH;
		goto out;
	}
	*step = MAPS_STEP_UID_MAP;
	n = read_map(pid, "uid_map", uid_buf, cap);
	if (n < 0) {
		err = -n;
		goto out;
	}
	*uid_len = n;
	*step = MAPS_STEP_GID_MAP;
	n = read_map(pid, "gid_map", gid_buf, cap);
	if (n < 0) {
		err = -n;
		goto out;
	}
	*gid_len = n;
out:
	// With our ends of the wait pipe closed the child reads EOF and exits.
	close(a[0]);
	close(a[1]);
	close(st[0]);
	if (st[1] >= 0)
		close(st[1]);
	return -err;
}

int runc_userns_reap(int pid, void *stack, int block)
{
	int status;
	pid_t got;

	do
		got = waitpid(pid, &status, __WALL | (block ? 0 : WNOHANG));
	while (got < 0 && errno == EINTR);
	if (got == 0)
		return 0; // still running (only without block)
	// Reaped, or not our child any more (ECHILD: nothing else can be
	// done): either way it is off its stack.
	munmap(stack, HOLDER_STACK);
	return 1;
}
