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

int runc_userns_new(const char *uid_map, size_t uid_len, const char *gid_map, size_t gid_len, int *step,
		     int *holder_pid, void **holder_stack)
{
	sigset_t all, old;
	char path[64];
	int p[2], ns = -1, err = 0;
	void *stack;
	pid_t pid;

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
	pid = clone(holder, (char *)stack + HOLDER_STACK, CLONE_VM | CLONE_NEWUSER, stack);
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
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		ns = open(path, O_RDONLY | O_CLOEXEC);
		if (ns < 0)
			err = errno;
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
