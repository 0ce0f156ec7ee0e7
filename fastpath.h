/*
 * The pass-through fast path (fastpath_linux.c): what the constructor
 * decides, with the file system behind struct fp_sys so that the Go tests
 * (fastpath_linux.go) can run the same decision on bytes and fake files.
 */
#ifndef RUNC_USERNS_FASTPATH_H
#define RUNC_USERNS_FASTPATH_H

#include <stddef.h>

/* A runtime path longer than this is left to the Go code. */
#define FP_PATH_MAX 4096
/* A config file longer than this is left to the Go code. */
#define FP_CONFIG_MAX 65536
#define FP_ENV_MAX 4096 /* more environment entries: fp_decide leaves the call to Go */
/* A runc state.json longer than this is left to the Go code (runc's are a
 * few KiB; a spec with a huge annotation or env can be more). */
#define FP_STATE_MAX (4L << 20)

/* A bundle's config.json longer than this is left to the Go code (a spec
 * is a few KiB; the Go code reads up to 16 MiB). */
#define FP_SPEC_MAX (1L << 20)
/* config.DefaultStateDir: where pods' user namespaces are pinned. */
#define FP_DEFAULT_STATE_DIR "/run/runc-userns"
/* oci.AnnotationStamp: on every spec the wrapper edits; runc keeps the
 * spec's annotations in state.json (a test checks it is the Go constant). */
#define FP_STAMP_KEY "runc-userns.io/stamp"

/* netjoin.go's netjoinMarker: in a spec, the stamp of a create that took
 * the network namespace entry out (a test checks it is the Go constant). */
#define FP_NETJOIN_MARKER "\\\"netns\\\":"

/* fp_sys.read's answers besides a length. */
#define FP_READ_ENOENT (-1L) /* the file does not exist */
#define FP_READ_FAIL (-2L)   /* any other error, or longer than cap */

/* The files fp_decide reads, for fp_sys.read (the real one reads every
 * file alike; the tests' fake tells them apart). */
enum fp_file { FP_FILE_CONFIG, FP_FILE_STATE, FP_FILE_SPEC, FP_FILE_FEATURES, FP_NFILES };

struct fp_stat {
	unsigned long long dev, ino;
	unsigned int mode;
	long long size, mtime_ns; /* st_size; st_mtim in nanoseconds */
};

struct fp_sys {
	/* read reads the file at path, one of enum fp_file, into buf, at
	 * most cap bytes: the operator config, runc's state.json, a
	 * bundle's config.json, or the runtime's features the Go code
	 * cached. */
	long (*read)(const struct fp_sys *sys, int which, const char *path, char *buf, size_t cap);
	/* stat is stat(2): it follows symlinks; 0 on success. */
	int (*stat)(const struct fp_sys *sys, const char *path, struct fp_stat *st);
	/* exists: lstat(2) finds something at path (a symlink counts), or
	 * fails other than with ENOENT. */
	int (*exists)(const struct fp_sys *sys, const char *path);
	void *data;
};

/* oci.ValidateID's longest container ID. */
#define FP_ID_MAX 1024
/* More arguments than this: fp_initial_argv gives up (the Go code takes the call). */
#define FP_ARGC_MAX 4096

/* Where fp_release may release what a stamped delete's container held:
 * release is 0 when the Go code must (see plan_release). */
struct fp_plan {
	int release;
	char state_dir[FP_PATH_MAX];
	char root[FP_PATH_MAX];
	char id[FP_ID_MAX + 1];
	/* FP_GATE: argv[log_at] holds --log's value, after "=" when log_eq. */
	int log_at, log_eq;
	/* FP_GATE: the network namespace runc starts in, by path, as
	 * netjoin.go would start it ("": ours). */
	char netns[FP_PATH_MAX];
};

/* An in-flight marker's claim (inflight.go's inflightRecord); a pool
 * record's fields but allocated and members (pool.Allocation). seen: one
 * bit per member read. */
struct fp_claim {
	char owner[FP_ID_MAX + 1];
	unsigned int host_id, size;
	char root[FP_PATH_MAX];
	char member[FP_ID_MAX + 1];
	int seen;
};

/* A pool record is at most this long for the C side (a few hundred
 * bytes with a pod's members; longer ones are the Go code's). */
#define FP_RECORD_MAX 4096

/* A pool record: its fields in head (member unused), its allocated time
 * as written, and its members, each NUL-terminated, one after the other
 * in members (nmembers of them, the first also in member). */
struct fp_record {
	struct fp_claim head;
	char allocated[64];
	int nmembers;
	char member[FP_ID_MAX + 1];
	char members[FP_RECORD_MAX];
	size_t members_len;
};

/* fp_decide's verdicts. */
#define FP_GO 0    /* the Go code handles the call */
#define FP_EXEC 1  /* exec runtime with argv: all the Go code would do */
#define FP_SPAWN 2 /* start runtime with argv now; the Go code waits and releases */
#define FP_GATE 3  /* a create: start runtime now behind the gate on --log; the Go code opens it */

/*
 * fp_decide returns FP_EXEC and the real runc's path in runtime (cap bytes)
 * when argv is a pass-through call that the Go code would answer with a
 * bare exec of that runc, argv untouched: among them a create whose spec
 * asks nothing of the wrapper. It returns FP_SPAWN and that path
 * for a delete of a container the wrapper edited, with a config file in
 * effect: the Go code runs that runc with argv untouched before anything
 * else it does. Then *state is a malloc'd copy of the container's runc
 * state.json, *state_len bytes, which the Go code reads the stamp from
 * (state NULL: never FP_SPAWN). It returns FP_GATE and that path for a
 * create the Go code acts on that the constructor may start behind the
 * gate (fastpath_linux.c, "--- create"), with plan's state_dir, root, id,
 * log_at and netns set. FP_GO when it is none of these, or not sure.
 */
int fp_decide(char *const *argv, char *const *envp, const struct fp_sys *sys, char *runtime, size_t cap,
	      char **state, long *state_len, struct fp_plan *plan);

/*
 * fp_release releases what container id of runc root root held, as
 * delete.go's release does, after runc deleted it: in state_dir, its
 * staging directories, its range when it was the last member, the pod's
 * pin with it, and its in-flight marker. It returns 1 when it did all of
 * that, 0 when it left something to the Go code (which redoes the release
 * from where it stopped: each step is idempotent).
 */
int fp_release(const char *state_dir, const char *root, const char *id);

/* For the tests: the signals the constructor forwards to an early runc
 * while it waits (*list, the count returned); layout.go's rootHash of the n bytes of root (12 hex
 * digits and a NUL), and the parsers of a marker's claim and a pool record
 * (1: parsed, every member once, nothing else). */
int fp_short_signals(const int **list);
void fp_root_hash(const char *root, size_t n, char out[13]);
int fp_parse_claim(const char *raw, size_t len, struct fp_claim *c);
int fp_parse_record(const char *raw, size_t len, struct fp_record *r);

/*
 * fp_early returns the pid of the runc the constructor started on FP_SPAWN
 * (0: none) and, through state and state_len, the malloc'd state.json bytes
 * it read (the caller frees them); once: a second call returns 0.
 */
int fp_early(char **state, long *state_len);

/*
 * fp_gated returns the pid of the runc create the constructor started on
 * FP_GATE (0: none), with the container's in-flight marker, locked and
 * inherited by that runc (*marker; *created: the constructor made the
 * file), and an O_PATH descriptor of the FIFO whose /proc path runc's --log
 * names (*gate); once: a second call returns 0.
 */
int fp_gated(int *marker, int *created, int *gate);

/* argc and argv from the initial environment array and argv[0]: how the
 * constructor gets them under a C library that does not pass them (musl). */
int fp_initial_argv(char **envp, const char *progname, int *argc, char ***argv);

/*
 * fp_read_file is the real fp_sys.read, for every file: a regular file only,
 * opened O_NONBLOCK (a FIFO must not hang the call), whole and at most cap
 * bytes, else FP_READ_FAIL.
 */
long fp_read_file(const struct fp_sys *sys, int which, const char *path, char *buf, size_t cap);

#endif
