#include <stddef.h>

enum { HOLDER_STEP_CLONE, HOLDER_STEP_UID_MAP, HOLDER_STEP_GID_MAP, HOLDER_STEP_OPEN };

// runc_userns_new returns an fd of a new user namespace with the given
// maps, or -errno with *step naming the step that failed. Either way the
// holder child it made, if any (*holder_pid not 0), is on its way out but
// not reaped: pass *holder_pid and *holder_stack to runc_userns_reap.
int runc_userns_new(const char *uid_map, size_t uid_len, const char *gid_map, size_t gid_len, int *step,
		    int *holder_pid, void **holder_stack);

// runc_userns_reap reaps a holder and unmaps its stack: 1 when done, 0
// when it is still running (block 0 only).
int runc_userns_reap(int pid, void *stack, int block);
