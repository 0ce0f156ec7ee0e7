/*
 * cexec: the floor of any exec wrapper. A static C program that execs
 * RUNTIME (set at build time, hack/bench.sh) with its own argv, and does
 * nothing else: what one more execve costs. make bench puts it beside the
 * pass-through figures, where runc-userns runs its C fast path and execs
 * runc too.
 */
#include <stdio.h>
#include <unistd.h>

#ifndef RUNTIME
#error "build with -DRUNTIME='\"/path/to/runc\"'"
#endif

int main(int argc, char **argv)
{
	(void)argc;
	argv[0] = RUNTIME;
	execv(RUNTIME, argv);
	perror("cexec: execv " RUNTIME);
	return 127;
}
