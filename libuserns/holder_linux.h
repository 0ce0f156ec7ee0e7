#include <stddef.h>

enum { HOLDER_STEP_CLONE, HOLDER_STEP_UID_MAP, HOLDER_STEP_GID_MAP, HOLDER_STEP_OPEN, HOLDER_STEP_OPEN_IPC,
       HOLDER_STEP_OPEN_UTS };

// runc_userns_new returns an fd of a new user namespace with the given
// maps, or -errno with *step naming the step that failed. With ipc_uts
// set, the same clone also makes an IPC and a UTS namespace, which the
// kernel has the new user namespace own, and *ipc_fd and *uts_fd are fds
// of them (-1 otherwise, and on failure). Either way the holder child it
// made, if any (*holder_pid not 0), is on its way out but not reaped:
// pass *holder_pid and *holder_stack to runc_userns_reap.
int runc_userns_new(const char *uid_map, size_t uid_len, const char *gid_map, size_t gid_len, int ipc_uts,
		    int *ipc_fd, int *uts_fd, int *step, int *holder_pid, void **holder_stack);

// runc_userns_reap reaps a holder and unmaps its stack: 1 when done, 0
// when it is still running (block 0 only).
int runc_userns_reap(int pid, void *stack, int block);

enum { MAPS_STEP_CLONE, MAPS_STEP_SETNS, MAPS_STEP_CHECK, MAPS_STEP_UID_MAP, MAPS_STEP_GID_MAP };

// runc_userns_maps reads the uid_map and gid_map of the user namespace ns
// (an fd) through a child that joined it: 0 with the maps in the buffers
// (cap bytes each, a map that fills one is refused), or -errno with *step
// naming the step that failed. As for runc_userns_new, the child, if any
// (*holder_pid not 0), is on its way out but not reaped.
int runc_userns_maps(int ns, char *uid_buf, size_t *uid_len, char *gid_buf, size_t *gid_len, size_t cap, int *step,
		     int *holder_pid, void **holder_stack);
