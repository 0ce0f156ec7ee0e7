// Signal forwarding to the runc a create or delete waits for, by a plain
// signal handler rather than os/signal (see forward_cgo_linux.go).

#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "forward.h"

#define HOLD 0  /* runc not started yet: signals are held */
#define DROP -1 /* runc has exited: signals are dropped */

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "a signal handler needs lock-free atomics");

/*
 * Where forward() sends: HOLD, runc's pid while it runs, or DROP. The
 * handler may run on any of the Go runtime's threads, at any time: busy
 * counts the handlers running, and fwd_stop waits for them, so that once
 * it returns no handler can still send to the pid. The caller stops
 * while runc is an unreaped zombie, whose pid no other process can have.
 *
 * Held signals are sent in the order of their numbers, not of their
 * arrival, and each once however often it came (os/signal coalesced
 * them too). Only signals below 32 are forwarded (runc.ShortSignals).
 *
 * A signal the caller left ignored (SIGINT under a non-interactive
 * shell's &, SIGHUP under nohup) keeps this handler in syscall.ForkExec's
 * child until its execve, where the Go runtime resets only those whose
 * handler it installed itself; the child shares our memory until then
 * (CLONE_VM), so a handler run there only sets a bit in held or sends to
 * runc early, both harmless.
 */
static atomic_int target = HOLD;
static atomic_uint held;
static atomic_int busy;

static void send_held(pid_t pid)
{
	unsigned int sigs = atomic_exchange(&held, 0U);
	int sig;

	for (sig = 1; sig < 32; sig++)
		if (sigs & (1U << sig))
			kill(pid, sig);
}

static void forward(int sig)
{
	int saved = errno, pid;

	atomic_fetch_add(&busy, 1);
	pid = atomic_load(&target);
	if (pid > 0) {
		kill(pid, sig);
	} else if (pid == HOLD && sig > 0 && sig < 32) {
		atomic_fetch_or(&held, 1U << sig);
		/* fwd_start may have taken held just before our bit went in:
		 * then it is ours to send. */
		pid = atomic_load(&target);
		if (pid > 0)
			send_held(pid);
	}
	atomic_fetch_sub(&busy, 1);
	errno = saved;
}

int fwd_install(const int *sigs, int n)
{
	struct sigaction sa, old[FWD_MAX];
	int i, err;

	if (n < 1 || n > FWD_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (sigs[i] < 1 || sigs[i] >= 32)
			return -EINVAL;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = forward;
	/* SA_ONSTACK: it may run on any thread, on a goroutine's small
	 * stack; the Go runtime gives each of its threads an alternate one. */
	sa.sa_flags = SA_ONSTACK | SA_RESTART;
	sigfillset(&sa.sa_mask);
	atomic_store(&target, HOLD);
	atomic_store(&held, 0U);
	for (i = 0; i < n; i++) {
		if (sigaction(sigs[i], &sa, &old[i]) != 0) {
			/* Give the Go runtime its handlers back, so that
			 * os/signal can take over. */
			err = errno;
			while (--i >= 0)
				sigaction(sigs[i], &old[i], NULL);
			return -err;
		}
	}
	return 0;
}

void fwd_start(pid_t pid)
{
	atomic_store(&target, (int)pid);
	send_held(pid);
}

void fwd_stop(void)
{
	atomic_store(&target, DROP);
	atomic_store(&held, 0U);
	while (atomic_load(&busy) > 0)
		sched_yield();
}
