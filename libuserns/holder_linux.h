#include <stddef.h>

enum { HOLDER_STEP_CLONE, HOLDER_STEP_UID_MAP, HOLDER_STEP_GID_MAP, HOLDER_STEP_OPEN };

// runc_userns_new returns an fd of a new user namespace with the given
// maps, or -errno with *step naming the step that failed.
int runc_userns_new(const char *uid_map, size_t uid_len, const char *gid_map, size_t gid_len, int *step);
