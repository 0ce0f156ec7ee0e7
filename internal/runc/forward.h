#ifndef RUNC_USERNS_FORWARD_H
#define RUNC_USERNS_FORWARD_H

#include <sys/types.h>

#define FWD_MAX 16 /* signals fwd_install takes, each below 32 */

/* fwd_install makes sigs forwarded from now on, held until fwd_start, for
 * the rest of the process; 0 or -errno, and then nothing changed. */
int fwd_install(const int *sigs, int n);
/* fwd_start sends what was held, and what comes, to our child pid. */
void fwd_start(pid_t pid);
/* fwd_stop drops every signal from now on; when it returns, no handler
 * will send to the pid fwd_start was given. */
void fwd_stop(void);

#endif
