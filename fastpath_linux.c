//go:build cgo

/*
 * The pass-through fast path: a constructor that runs before the Go runtime
 * starts (as runc's nsexec does) and, for a call the Go code would answer
 * with a bare exec of the real runc, execs it at once. The Go runtime's
 * start-up alone costs ~200 page faults, several milliseconds on a nested
 * VM; state, kill and start are called for every container, delete too,
 * and exec for every exec probe.
 *
 * delete and exec are the Go code's (delete.go, netjoin.go's execIn), but
 * for a container the wrapper never edited it too only reads runc's
 * state.json and execs runc: so they are fast-pathed when their argv
 * scans completely, the ID is valid and <root>/<id>/state.json is whole
 * and does not hold the stamp annotation's key. Every spec the wrapper
 * edits carries that stamp and runc copies the spec's annotations into
 * state.json; without a state.json (a create killed before runc had the
 * container) delete must release by pool membership: the Go code's.
 *
 * create is the Go code's, but for a spec that asks nothing of the
 * wrapper (spec_untouched below: most containers on a node, which do not
 * use a pool user namespace) it too only execs runc. For one that does,
 * the constructor starts runc at once, behind a gate that holds it before
 * it reads config.json, and the Go code opens the gate once it has written
 * the edited spec ("--- create" below): runc's start-up and ours overlap.
 *
 * A delete of a container the wrapper did edit runs runc's delete too, and
 * with the configured runtime whatever its stamp says, then releases what
 * the container held. With a config file in effect (without one, delete.go
 * may take the stamp's runtime, which only Go can verify), the constructor
 * starts that runc at once (posix_spawn). In the usual case it then waits
 * for runc and releases what the container held itself (fp_release, "---
 * delete" below) and exits: no Go runtime at all. Otherwise it returns:
 * runc deletes while the Go runtime starts, on the other core, instead of
 * after it, and the Go code (early.go) gets runc's pid and the state.json
 * bytes read before runc ran, waits for runc instead of running it, and
 * releases as before.
 *
 * It is an optimisation and nothing else: it never prints, never fails a
 * call and never changes argv but for the gated runc's --log, whose lines
 * the Go code copies to the caller's file (a release it cannot finish is
 * the Go code's, which reports what went wrong). Whatever it does not fully
 * understand (an unknown flag, a config key, an escape in a string, a
 * relative PATH entry before runc is found, a failed execve) makes it
 * return, and the Go code handles the call exactly as without it, errors
 * included. So it only execs when the Go code would: same command, same
 * config verdict, same runc, same argv[0], same environment.
 *
 * RUNC_USERNS_FASTPATH=0 in the environment turns it off.
 *
 * When the Go code is to handle the call, the constructor also maps the
 * binary's code and data into the page tables in one call each
 * (prefault_image below) before the Go runtime starts, where a page fault
 * is dear (populate_linux.c).
 *
 * The price: with cgo linked in, the Go runtime starts through the C
 * library (musl, Makefile's BUILD_CC) and makes its threads with
 * pthread_create, ~50 more page faults (~1.5 ms on the nested VM measured)
 * on the calls the Go code handles (create, and delete and exec of the
 * containers it edited); each fast-pathed call saves ~7 ms.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <dirent.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673 /* linux/magic.h */
#endif

#include "fastpath.h"

#define DEFAULT_CONFIG "/etc/runc-userns/config.json"

static int in(const char *const *list, const char *s, size_t n)
{
	for (; *list; list++)
		if (strlen(*list) == n && memcmp(*list, s, n) == 0)
			return 1;
	return 0;
}

/* --- argv: internal/oci/args.go's global-flag loop. */

/* runc's global flags (oci.globalFlags); help and version are left to Go. */
static const char *const value_flags[] = {"log", "log-format", "root", "criu", "rootless", NULL};
static const char *const bool_flags[] = {"debug", "systemd-cgroup", NULL};

/*
 * The commands main.go's dispatch answers with a bare a.exec(). Never
 * run, features (the Go code acts on them), the admin verbs, or anything
 * else; delete and exec only as read_state() says, create only as
 * spec_untouched() says.
 */
static const char *const fast_commands[] = {
	"start", "state", "kill", "list", "ps", "events", "pause", "resume", "update", NULL,
};

/* oci.commandFlags for delete and exec, without help and h: a call for
 * runc's usage is rare and not worth a rule of its own; Go passes it on. */
static const char *const delete_bools[] = {"force", "f", NULL};
static const char *const delete_values[] = {NULL};
static const char *const exec_bools[] = {"tty", "t", "detach", "d", "no-new-privs", "ignore-paused", NULL};
static const char *const exec_values[] = {
	"console-socket", "pidfd-socket", "cwd", "env", "e", "user", "u", "additional-gids", "g", "process", "p",
	"pid-file", "process-label", "apparmor", "cap", "c", "preserve-fds", "cgroup", NULL,
};

/* oci.commandFlags for create, without help and h. */
static const char *const create_bools[] = {"no-pivot", "no-new-keyring", NULL};
static const char *const create_values[] = {
	"bundle", "b", "console-socket", "pidfd-socket", "pid-file", "preserve-fds", NULL,
};

/* What fast_argv found. */
enum { ARGV_GO, ARGV_FAST, ARGV_DELETE, ARGV_EXEC, ARGV_CREATE };

/* split_flag is oci.splitFlag: "-x", "--x", "-x=v" and "--x=v". */
static int split_flag(const char *arg, const char **name, size_t *n, int *has_value)
{
	const char *eq;

	if (arg[0] != '-' || arg[1] == '\0' || strcmp(arg, "--") == 0)
		return 0;
	arg++;
	if (arg[0] == '-')
		arg++;
	if (arg[0] == '\0' || arg[0] == '-' || arg[0] == '=')
		return 0;
	eq = strchr(arg, '=');
	*name = arg;
	*n = eq ? (size_t)(eq - arg) : strlen(arg);
	*has_value = eq != NULL;
	return 1;
}

/*
 * command_id is oci.Parse's scan of delete's, exec's or create's own flags,
 * for the calls it marks Scanned: the container ID, or NULL. exec's flags
 * end at its first positional, the ID (the rest is the command); delete and
 * create have one positional, with flags before or after it. "--" (Parse
 * then takes the rest as positionals) is left to the Go code. For create,
 * *bundle is the last --bundle's value ("" without one).
 */
static const char *command_id(char *const *args, int kind, const char **bundle)
{
	const char *const *bools = kind == ARGV_EXEC ? exec_bools : kind == ARGV_CREATE ? create_bools : delete_bools;
	const char *const *values = kind == ARGV_EXEC ? exec_values : kind == ARGV_CREATE ? create_values : delete_values;
	const char *name, *id = NULL;
	size_t n;
	int has_value, j;

	for (j = 0; args[j]; j++) {
		if (strcmp(args[j], "--") == 0)
			return NULL;
		if (!split_flag(args[j], &name, &n, &has_value)) {
			if (id)
				return NULL; /* a second positional */
			id = args[j];
			if (kind == ARGV_EXEC)
				break;
			continue;
		}
		if (in(bools, name, n))
			continue;
		if (!in(values, name, n))
			return NULL; /* help, h, or unknown */
		if (!has_value && !args[++j])
			return NULL;
		if (kind == ARGV_CREATE && (n == 1 || n == 6) && memcmp(name, "bundle", n) == 0)
			*bundle = has_value ? name + n + 1 : args[j];
	}
	return id;
}

/* runc's default --root for real root outside a user namespace; fast_argv
 * leaves *root pointing at it when argv has no --root. */
static const char default_root[] = "/run/runc"; /* oci.DefaultRoot */

/*
 * fast_argv: after global flags that oci.Parse knows (and no --help or
 * --version), argv's command is one of fast_commands (ARGV_FAST), or a
 * delete, exec or create that Parse scans completely (ARGV_DELETE,
 * ARGV_EXEC, ARGV_CREATE, with the last --root, as Parse keeps it, the ID,
 * and create's bundle).
 */
static int fast_argv(char *const *argv, const char **root, const char **id, const char **bundle, int *debug,
		     int *log_at, int *log_eq)
{
	const char *name, *cmd;
	size_t n;
	int has_value, i;

	if (!argv || !argv[0])
		return ARGV_GO;
	*root = default_root;
	for (i = 1; argv[i]; i++) {
		if (!split_flag(argv[i], &name, &n, &has_value))
			break;
		if (in(bool_flags, name, n)) {
			*debug |= n == 5 && memcmp(name, "debug", 5) == 0;
			continue;
		}
		if (!in(value_flags, name, n))
			return ARGV_GO; /* help, version, or runc's own error */
		if (n == 3 && memcmp(name, "log", 3) == 0) {
			/* One --log only (the gate swaps its value): -1 for two. */
			*log_at = *log_at ? -1 : has_value ? i : i + 1;
			*log_eq = has_value;
		}
		if (!has_value) {
			if (!argv[i + 1])
				return ARGV_GO;
			i++;
		}
		if (n == 4 && memcmp(name, "root", 4) == 0)
			*root = has_value ? name + 5 : argv[i];
	}
	if (argv[i] && strcmp(argv[i], "--") == 0)
		i++;
	cmd = argv[i];
	if (!cmd)
		return ARGV_GO;
	if (in(fast_commands, cmd, strlen(cmd)))
		return ARGV_FAST;
	if (strcmp(cmd, "exec") == 0) {
		*id = command_id(argv + i + 1, ARGV_EXEC, bundle);
		return *id ? ARGV_EXEC : ARGV_GO;
	}
	if (strcmp(cmd, "delete") == 0) {
		*id = command_id(argv + i + 1, ARGV_DELETE, bundle);
		return *id ? ARGV_DELETE : ARGV_GO;
	}
	if (strcmp(cmd, "create") == 0) {
		*bundle = "";
		*id = command_id(argv + i + 1, ARGV_CREATE, bundle);
		return *id ? ARGV_CREATE : ARGV_GO;
	}
	return ARGV_GO;
}

/* fp_getenv is Go's os.Getenv: the first NAME=value wins. */
static const char *fp_getenv(char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; *envp; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

/*
 * --- config.json: internal/config's Parse, as far as its verdict goes.
 *
 * The Go code fails every call, pass-through ones included, on a config it
 * refuses (unknown keys, wrong types, a bad mode, relative paths). So this
 * is not "valid JSON with a runtime": it accepts only documents that
 * config.Parse accepts, in a stricter form: the schema's keys spelled
 * exactly (encoding/json also matches them case-insensitively), no null,
 * integers without fraction or exponent, no escape where the value
 * matters. Everything else is left to Go. The schema bounds the nesting.
 */

struct json {
	const char *p, *end;
};

static int space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void ws(struct json *j)
{
	while (j->p < j->end && space(*j->p))
		j->p++;
}

/* eat skips white space and then c. */
static int eat(struct json *j, char c)
{
	ws(j);
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return 1;
	}
	return 0;
}

static int hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* str reads a string: s and n are its bytes between the quotes as written,
 * esc says whether it holds an escape (then s is not its value). */
static int str(struct json *j, const char **s, size_t *n, int *esc)
{
	if (!eat(j, '"'))
		return 0;
	*s = j->p;
	*esc = 0;
	while (j->p < j->end) {
		unsigned char c = (unsigned char)*j->p++;
		if (c == '"') {
			*n = (size_t)(j->p - 1 - *s);
			return 1;
		}
		if (c < 0x20)
			return 0;
		if (c != '\\')
			continue;
		*esc = 1;
		if (j->p >= j->end)
			return 0;
		c = (unsigned char)*j->p++;
		if (c == 'u') {
			if (j->end - j->p < 4 || !hex(j->p[0]) || !hex(j->p[1]) || !hex(j->p[2]) || !hex(j->p[3]))
				return 0;
			j->p += 4;
		} else if (!strchr("\"\\/bfnrt", c) || c == '\0') {
			return 0;
		}
	}
	return 0;
}

/* key reads an object key and its colon; a key with an escape is refused
 * (it may spell one of ours). */
static int key(struct json *j, const char **s, size_t *n)
{
	int esc;

	return str(j, s, n, &esc) && !esc && eat(j, ':');
}

/* u32_value reads what encoding/json stores in a uint32, digits only,
 * into *out. */
static int u32_value(struct json *j, unsigned int *out)
{
	unsigned long long v = 0;

	ws(j);
	if (j->p >= j->end || *j->p < '0' || *j->p > '9')
		return 0;
	if (*j->p == '0' && j->p + 1 < j->end && j->p[1] >= '0' && j->p[1] <= '9')
		return 0;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
		v = v * 10 + (unsigned long long)(*j->p++ - '0');
		if (v > 0xffffffffULL)
			return 0;
	}
	*out = (unsigned int)v;
	return !(j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'));
}

static int u32(struct json *j)
{
	unsigned int v;

	return u32_value(j, &v);
}

/* literal reads lit (true, false, null) where the value starts. */
static int literal(struct json *j, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0)
		return 0;
	j->p += n;
	return 1;
}

static int boolean(struct json *j)
{
	ws(j);
	return literal(j, "true") || literal(j, "false");
}

/* object reads {"k": v, ...}, calling member for each key, which reads the
 * value. */
static int object(struct json *j, int (*member)(struct json *, const char *, size_t, void *), void *arg)
{
	const char *k;
	size_t n;

	if (!eat(j, '{'))
		return 0;
	if (eat(j, '}'))
		return 1;
	do {
		if (!key(j, &k, &n) || !member(j, k, n, arg))
			return 0;
	} while (eat(j, ','));
	return eat(j, '}');
}

#define IS_KEY(k, n, lit) ((n) == sizeof(lit) - 1 && memcmp(k, lit, n) == 0)
#define IS(lit) IS_KEY(k, n, lit)

/* pool.Range */
static int range_member(struct json *j, const char *k, size_t n, void *arg)
{
	(void)arg;
	return (IS("hostID") || IS("size")) && u32(j);
}

/* array reads [v, ...], calling elem for each element, which reads it. */
static int array(struct json *j, int (*elem)(struct json *, void *), void *arg)
{
	if (!eat(j, '['))
		return 0;
	if (eat(j, ']'))
		return 1;
	do {
		if (!elem(j, arg))
			return 0;
	} while (eat(j, ','));
	return eat(j, ']');
}

static int range(struct json *j, void *arg)
{
	(void)arg;
	return object(j, range_member, NULL);
}

static int ranges(struct json *j)
{
	return array(j, range, NULL);
}

/* What create's decision needs of the config besides the runtime. */
struct conf {
	const char *state_dir; /* as written; NULL: unset */
	size_t state_dir_n;
	int unsure; /* stateDir or mode escaped or given twice: create is Go's */
	int always; /* userns.mode "always": create is Go's */
};

/* config.Userns */
static int userns_member(struct json *j, const char *k, size_t n, void *arg)
{
	struct conf *c = arg;
	const char *s;
	size_t sn;
	int esc;

	if (IS("mode")) {
		/* config.Parse: "" (the default), annotation, always or off.
		 * Go takes the last of two; create leaves that to it. */
		if (!str(j, &s, &sn, &esc) || esc ||
		    !(sn == 0 || (sn == 10 && memcmp(s, "annotation", 10) == 0) ||
		      (sn == 6 && memcmp(s, "always", 6) == 0) || (sn == 3 && memcmp(s, "off", 3) == 0)))
			return 0;
		if (c->always >= 0)
			c->unsure = 1;
		c->always = sn == 6;
		return 1;
	}
	if (IS("subidUser"))
		return str(j, &s, &sn, &esc);
	if (IS("ranges"))
		return ranges(j);
	if (IS("slotSize"))
		return u32(j);
	if (IS("rootfsChown"))
		return boolean(j);
	return 0;
}

struct top {
	const char *runtime;
	size_t n;
	int seen;
	struct conf *conf;
};

/* config.Config */
static int top_member(struct json *j, const char *k, size_t n, void *arg)
{
	struct top *t = arg;
	const char *s;
	size_t sn, i;
	int esc;

	if (IS("runtime")) {
		/* Go takes the last of two; any escape or non-ASCII byte (Go
		 * replaces invalid UTF-8) could make Go's value differ from
		 * these bytes; config.Parse wants an absolute path. */
		if (t->seen || !str(j, &s, &sn, &esc) || esc || (sn > 0 && s[0] != '/'))
			return 0;
		for (i = 0; i < sn; i++)
			if ((unsigned char)s[i] >= 0x80)
				return 0;
		t->seen = 1;
		t->runtime = s;
		t->n = sn;
		return 1;
	}
	if (IS("stateDir")) {
		/* config.Parse wants it absolute when set. Go replaces invalid
		 * UTF-8, so with a non-ASCII byte the pins Go made may be under
		 * another name than these bytes. */
		if (!str(j, &s, &sn, &esc) || (sn > 0 && s[0] != '/'))
			return 0;
		if (esc || t->conf->state_dir)
			t->conf->unsure = 1;
		for (i = 0; i < sn; i++)
			if ((unsigned char)s[i] >= 0x80)
				t->conf->unsure = 1;
		t->conf->state_dir = s;
		t->conf->state_dir_n = sn;
		return 1;
	}
	if (IS("userns"))
		return object(j, userns_member, t->conf);
	return 0;
}

#undef IS

/* parse_config: config.Parse accepts raw; runtime is its "runtime" ("" when
 * unset), NUL-terminated in cap bytes; conf what create needs. */
static int parse_config(const char *raw, size_t len, char *runtime, size_t cap, struct conf *conf)
{
	struct json j = {raw, raw + len};
	struct top t = {NULL, 0, 0, conf};

	if (!object(&j, top_member, &t))
		return 0;
	ws(&j);
	if (j.p != j.end || t.n >= cap)
		return 0;
	memcpy(runtime, t.runtime ? t.runtime : "", t.n);
	runtime[t.n] = '\0';
	return 1;
}

/* --- the runtime: internal/runc's Find. */

static const char *const fallback_paths[] = {
	"/usr/local/sbin/runc", "/usr/local/bin/runc", "/usr/sbin/runc", "/usr/bin/runc", "/sbin/runc", "/bin/runc", NULL,
};

/* join is Go's filepath.Join(dir, name) for an absolute dir and a name
 * that is one plain component: the lexical Clean ("a/../b" is "b" even if
 * a is a symlink), which is the path Go uses. */
static int join(const char *dir, size_t n, const char *name, char *out, size_t cap)
{
	size_t i = 0, o = 1, s, len;
	int last = 0;

	if (cap < 2)
		return 0;
	out[0] = '/';
	while (!last) {
		const char *e;

		while (i < n && dir[i] == '/')
			i++;
		s = i;
		while (i < n && dir[i] != '/')
			i++;
		e = dir + s;
		len = i - s;
		if (len == 0) {
			e = name;
			len = strlen(name);
			last = 1;
		} else if (len == 1 && e[0] == '.') {
			continue;
		} else if (len == 2 && e[0] == '.' && e[1] == '.') {
			while (o > 1 && out[o - 1] != '/')
				o--;
			if (o > 1)
				o--;
			continue;
		}
		if (o > 1)
			out[o++] = '/';
		if (o + len + 1 > cap)
			return 0;
		memcpy(out + o, e, len);
		o += len;
		if (o + 1 > cap)
			return 0;
	}
	out[o] = '\0';
	return 1;
}

/* candidate: Find's test for one path: a regular file with an exec bit
 * that is not this binary. */
static int candidate(const struct fp_sys *sys, const char *path, const struct fp_stat *self)
{
	struct fp_stat st;

	if (sys->stat(sys, path, &st) != 0 || !S_ISREG(st.mode) || !(st.mode & 0111))
		return 0;
	return !(st.dev == self->dev && st.ino == self->ino);
}

static int find_runc(const struct fp_sys *sys, const char *configured, const char *path_env, char *runtime, size_t cap)
{
	struct fp_stat self, st;
	const char *const *f;

	if (sys->stat(sys, "/proc/self/exe", &self) != 0)
		return 0;
	if (configured[0]) {
		/* Find: stat it, refuse ourselves (ErrSelf), no other test. */
		if (sys->stat(sys, configured, &st) != 0 || (st.dev == self.dev && st.ino == self.ino))
			return 0;
		if (strlen(configured) >= cap)
			return 0;
		strcpy(runtime, configured);
		return 1;
	}
	/* filepath.SplitList("") is empty; an empty entry is ".". */
	while (path_env && *path_env) {
		const char *colon = strchr(path_env, ':');
		size_t n = colon ? (size_t)(colon - path_env) : strlen(path_env);

		/* A relative entry, which Go skips (never a runc from the
		 * working directory): leave the call to it. */
		if (n == 0 || path_env[0] != '/')
			return 0;
		/* Also the path Go stats and passes as argv[0]. */
		if (!join(path_env, n, "runc", runtime, cap))
			return 0;
		if (candidate(sys, runtime, &self))
			return 1;
		if (!colon)
			break;
		path_env = colon + 1;
		if (!*path_env)
			return 0; /* a trailing empty entry: "." */
	}
	for (f = fallback_paths; *f; f++) {
		if (candidate(sys, *f, &self)) {
			if (strlen(*f) >= cap)
				return 0;
			strcpy(runtime, *f);
			return 1;
		}
	}
	return 0;
}

/* --- delete and exec: delete.go and netjoin.go's execIn. */

/* valid_id is oci.ValidateID. */
static int valid_id(const char *id)
{
	size_t n = strlen(id), i;

	if (n == 0 || n > 1024 || strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
		return 0;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("_+-.", c)))
			return 0;
	}
	return 1;
}

/* What runc's state.json of a delete's or exec's container says. */
enum { STATE_UNSURE, STATE_UNSTAMPED, STATE_STAMPED, STATE_MISSING };

/*
 * read_state reads <root>/<id>/state.json. STATE_UNSTAMPED: runc has
 * container id under root and the wrapper never edited it, so the Go code
 * would exec runc at once: delete finds no stamp to release by, execIn no
 * network namespace to enter. STATE_STAMPED: the file holds the stamp key,
 * and then *keep is a malloc'd copy of its len bytes (*keep_len) for the Go
 * code, which must read the stamp from what state.json held before runc's
 * delete removed it. Either way the file must be whole (a '{' first and a
 * '}' last, white space aside). runc writes it with encoding/json, which
 * never escapes a byte of the key, so a stamp cannot hide in an escape. A
 * relative --root is left to Go (filepath.Abs). STATE_MISSING: there is no
 * such file (runc does not have the container).
 */
static int read_state(const struct fp_sys *sys, const char *root, const char *id, char **keep, long *keep_len)
{
	char path[FP_PATH_MAX];
	struct json j;
	char *buf;
	long len;
	int kind = STATE_UNSURE;

	if (root[0] != '/' || !valid_id(id))
		return STATE_UNSURE;
	/* The ID is one plain component: Go's Join(Abs(root), id, "state.json"). */
	if (!join(root, strlen(root), id, path, sizeof path - sizeof "/state.json"))
		return STATE_UNSURE;
	strcat(path, "/state.json");
	/* Not on the stack: 4 MiB; malloc maps it, only the pages read fault. */
	buf = malloc(FP_STATE_MAX);
	if (!buf)
		return STATE_UNSURE;
	len = sys->read(sys, FP_FILE_STATE, path, buf, FP_STATE_MAX);
	if (len == FP_READ_ENOENT)
		kind = STATE_MISSING;
	if (len > 0) {
		j.p = buf;
		j.end = buf + len;
		ws(&j);
		while (j.end > j.p && space(j.end[-1]))
			j.end--;
		if (j.end - j.p >= 2 && j.p[0] == '{' && j.end[-1] == '}')
			kind = memmem(buf, (size_t)len, FP_STAMP_KEY, sizeof FP_STAMP_KEY - 1) ? STATE_STAMPED
												  : STATE_UNSTAMPED;
	}
	if (kind == STATE_STAMPED && keep) {
		*keep = buf;
		*keep_len = len;
		return kind;
	}
	free(buf);
	return kind;
}

/*
 * --- create: create.go's decision to hand a create to runc as it is.
 *
 * The Go code passes a create through untouched when the spec asks nothing
 * of it: no annotation of ours, no user namespace or uid/gid mapping of the
 * caller's (checked against the pool), no idmap request, no container:<ID>
 * join, and it is not an app container of a pod whose sandbox holds a pool
 * user namespace; with userns.mode "always" it acts on every pod. Reading
 * that takes the Go runtime and a typed decode of the spec, ~10 ms here,
 * for every container of every pod that does not use the wrapper.
 *
 * spec_untouched decides it conservatively, on the bytes: the spec must be
 * valid JSON, and no string in it, key or value, may even mention what the
 * Go code acts on (plain_string). It never needs to know where in the spec
 * a string is, but for the annotations: their keys must be unique (the Go
 * code refuses duplicates) and each sandbox ID they name must have no pin
 * of a pod's user namespace under stateDir. A spec the Go code would refuse
 * for a type error (a string where it wants an array) goes to runc, which
 * refuses it in its own words, as it does for every call the wrapper
 * passes through. FuzzFastPathCreate holds this to create.go.
 */

/* SPEC_DEPTH bounds the nesting walked (a spec nests ~6 deep). */
#define SPEC_DEPTH 64
/* SPEC_KEYS bounds the annotations compared for duplicates. */
#define SPEC_KEYS 1024

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c + 'a' - 'A') : c;
}

/* has_fold: s (n bytes) holds lit (lower case), ASCII case-insensitively. */
static int has_fold(const char *s, size_t n, const char *lit)
{
	size_t m = strlen(lit), i, k;

	for (i = 0; i + m <= n; i++) {
		for (k = 0; k < m && lower(s[i + k]) == lit[k]; k++)
			;
		if (k == m)
			return 1;
	}
	return 0;
}

static int eq_fold(const char *s, size_t n, const char *lit)
{
	return n == strlen(lit) && has_fold(s, n, lit);
}

/*
 * plain_string: a string of the spec, as written (s, n), that the Go code
 * cannot act on. It names no annotation of ours ("runc-userns"), no uid or
 * gid mapping ("mappings": linux's and mounts'), no idmap mount option
 * ("idmap", "ridmap") and no container:<ID> reference ("container:"),
 * ASCII case-insensitively: encoding/json matches keys to fields so, and
 * nsjoin.LooksLikeRef references. A \u escape could spell any of them; the
 * other escapes stand for no letter, '-' or ':'. A key must be ASCII:
 * encoding/json also folds U+017F to 's' and the Kelvin sign to 'k'. A
 * value must not be "user" (the type of a user namespace entry).
 */
static int plain_string(const char *s, size_t n, int is_key)
{
	static const char *const mentions[] = {"runc-userns", "mappings", "idmap", "container:", NULL};
	const char *const *m;
	size_t i;

	for (i = 0; i + 1 < n; i++)
		if (s[i] == '\\' && s[i + 1] == 'u')
			return 0;
	for (m = mentions; *m; m++)
		if (has_fold(s, n, *m))
			return 0;
	if (!is_key)
		return !eq_fold(s, n, "user");
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] >= 0x80)
			return 0;
	return 1;
}

static int digits(struct json *j)
{
	const char *start = j->p;

	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > start;
}

/* number: JSON's grammar, -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int number(struct json *j)
{
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0')
		j->p++;
	else if (!digits(j))
		return 0;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (!digits(j))
			return 0;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!digits(j))
			return 0;
	}
	return 1;
}

struct spec {
	const struct fp_sys *sys;
	const char *state_dir;
	size_t state_dir_n;
};

static int walk(struct json *j, int depth, int plain);

/* any_member reads a member of any object: a plain key (object() already
 * refused one with an escape) and a plain value. */
static int any_member(struct json *j, const char *k, size_t n, void *depth)
{
	return plain_string(k, n, 1) && walk(j, *(int *)depth + 1, 1);
}

/* walk reads any JSON value; with plain, one whose strings, keys
 * included, are all plain (a key with an escape is not). */
static int walk(struct json *j, int depth, int plain)
{
	const char *s;
	size_t n;
	int esc;

	if (depth > SPEC_DEPTH)
		return 0;
	ws(j);
	if (j->p >= j->end)
		return 0;
	switch (*j->p) {
	case '{':
		j->p++;
		if (eat(j, '}'))
			return 1;
		do {
			if (!str(j, &s, &n, &esc) || (plain && (esc || !plain_string(s, n, 1))) || !eat(j, ':') ||
			    !walk(j, depth + 1, plain))
				return 0;
		} while (eat(j, ','));
		return eat(j, '}');
	case '[':
		j->p++;
		if (eat(j, ']'))
			return 1;
		do {
			if (!walk(j, depth + 1, plain))
				return 0;
		} while (eat(j, ','));
		return eat(j, ']');
	case '"':
		return str(j, &s, &n, &esc) && (!plain || plain_string(s, n, 0));
	case 't':
		return literal(j, "true");
	case 'f':
		return literal(j, "false");
	case 'n':
		return literal(j, "null");
	}
	return number(j);
}

/*
 * unpinned: podIsPooled is false for a container whose pod's sandbox is
 * the ID (s, n) as an annotation gives it: a valid ID without a pin at
 * <stateDir>/pods/<ID>/userns (the path Go's filepath.Join makes).
 * Anything else is left to Go.
 */
static int unpinned(const struct spec *sp, const char *s, size_t n)
{
	char id[1025], dir[FP_PATH_MAX], pods[FP_PATH_MAX], pin[FP_PATH_MAX];

	if (n >= sizeof id)
		return 0;
	memcpy(id, s, n);
	id[n] = '\0';
	if (!valid_id(id))
		return 0;
	return join(sp->state_dir, sp->state_dir_n, "pods", pods, sizeof pods) &&
	       join(pods, strlen(pods), id, dir, sizeof dir) && join(dir, strlen(dir), "userns", pin, sizeof pin) &&
	       !sp->sys->exists(sp->sys, pin);
}

/* The annotations read so far, for duplicates. */
struct annotations {
	const struct spec *sp;
	const char *keys[SPEC_KEYS];
	size_t lens[SPEC_KEYS];
	size_t n;
};

/* annotation reads one annotation: a plain string, a key not seen
 * before, and a sandbox ID (containerd's or CRI-O's) only of a pod
 * without a pin. */
static int annotation(struct json *j, const char *k, size_t n, void *arg)
{
	struct annotations *a = arg;
	const char *v;
	size_t vn, i;
	int esc;

	if (!plain_string(k, n, 1) || !str(j, &v, &vn, &esc) || !plain_string(v, vn, 0))
		return 0;
	if ((IS_KEY(k, n, "io.kubernetes.cri.sandbox-id") || IS_KEY(k, n, "io.kubernetes.cri-o.SandboxID")) &&
	    (esc || !unpinned(a->sp, v, vn)))
		return 0;
	if (a->n == SPEC_KEYS)
		return 0;
	for (i = 0; i < a->n; i++)
		if (a->lens[i] == n && memcmp(a->keys[i], k, n) == 0)
			return 0;
	a->keys[a->n] = k;
	a->lens[a->n++] = n;
	return 1;
}

/* The spec's own members: the annotations once. */
struct spec_top {
	struct annotations ann;
	int seen;
};

static int spec_member(struct json *j, const char *k, size_t n, void *arg)
{
	struct spec_top *t = arg;
	int depth = 1;

	if (!eq_fold(k, n, "annotations"))
		return any_member(j, k, n, &depth);
	if (t->seen++)
		return 0;
	ws(j);
	return literal(j, "null") || object(j, annotation, &t->ann);
}

/* spec_untouched: create.go would hand the create of a spec raw (len
 * bytes) to runc as it is. */
static int spec_untouched(const char *raw, size_t len, const struct spec *sp)
{
	struct json j = {raw, raw + len};
	struct spec_top t;

	t.ann.sp = sp;
	t.ann.n = 0;
	t.seen = 0;
	if (!object(&j, spec_member, &t))
		return 0;
	ws(&j);
	return j.p == j.end;
}

/* clean_abs: path is absolute and filepath.Clean leaves it as it is (no
 * empty, "." or ".." component, no trailing slash): Go's Abs(path) is
 * then the path the kernel resolves, symlinks or not. */
static int clean_abs(const char *path)
{
	const char *c = path;

	if (path[0] != '/')
		return 0;
	if (path[1] == '\0')
		return 1;
	while (*c == '/') {
		const char *e = ++c;

		while (*e && *e != '/')
			e++;
		if (e == c || (e - c == 1 && c[0] == '.') || (e - c == 2 && c[0] == '.' && c[1] == '.'))
			return 0;
		c = e;
	}
	return 1;
}

/*
 * --- the gate's spec check: does the spec join a network namespace by
 * path? A pool container that does, on runc < 1.3, has runc started inside
 * that namespace (netjoin.go), which a runc started here is not: its gate
 * would only cost a runc start-up spent for nothing. Every string and key
 * is taken as written (any JSON), keys ASCII case-insensitively as
 * encoding/json matches them; any doubt (an escaped key, a malformed spec)
 * answers yes.
 */

/* skip reads any JSON value. */
static int skip(struct json *j, int depth)
{
	return walk(j, depth, 0);
}

/* ascii: a key of n bytes in ASCII (encoding/json also folds U+017F to
 * 's' and the Kelvin sign to 'k': a key past ASCII may be one we look for). */
static int ascii(const char *k, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)k[i] >= 0x80)
			return 0;
	return 1;
}

/* netns_scan: the spec's first namespace entry of type network with a
 * path, as sysfs.go's foreignNetns finds it, into out (cap bytes). unsure:
 * the Go code may read it otherwise (a key twice, an escape, a key past
 * ASCII, a path not absolute or past ASCII: encoding/json replaces
 * invalid UTF-8). */
struct netns_scan {
	char *out;
	size_t cap;
	int found, unsure, linux_seen, ns_seen;
};

/* One namespace entry: its type is network, its path (as written). */
struct ns_entry {
	struct netns_scan *scan;
	const char *path;
	size_t path_n;
	int network, types, paths;
};

static int ns_member(struct json *j, const char *k, size_t n, void *arg)
{
	struct ns_entry *e = arg;
	const char *s;
	size_t sn;
	int esc, type = eq_fold(k, n, "type");

	if (!ascii(k, n))
		e->scan->unsure = 1;
	if (!type && !eq_fold(k, n, "path"))
		return skip(j, 3);
	if (type ? e->types++ : e->paths++)
		e->scan->unsure = 1;
	ws(j);
	if (literal(j, "null"))
		return 1;
	if (!str(j, &s, &sn, &esc))
		return 0;
	if (esc)
		e->scan->unsure = 1;
	if (type)
		e->network = sn == 7 && memcmp(s, "network", 7) == 0;
	else
		e->path = s, e->path_n = sn;
	return 1;
}

static int ns_elem(struct json *j, void *arg)
{
	struct netns_scan *sc = arg;
	struct ns_entry e = {sc, NULL, 0, 0, 0, 0};

	ws(j);
	if (literal(j, "null"))
		return 1;
	if (!object(j, ns_member, &e))
		return 0;
	if (sc->found || !e.network || e.path_n == 0)
		return 1;
	sc->found = 1;
	if (e.path_n >= sc->cap || e.path[0] != '/' || !ascii(e.path, e.path_n)) {
		sc->unsure = 1;
		return 1;
	}
	memcpy(sc->out, e.path, e.path_n);
	sc->out[e.path_n] = '\0';
	return 1;
}

static int linux_member(struct json *j, const char *k, size_t n, void *arg)
{
	struct netns_scan *sc = arg;

	if (!ascii(k, n))
		sc->unsure = 1;
	if (!eq_fold(k, n, "namespaces"))
		return skip(j, 2);
	if (sc->ns_seen++)
		sc->unsure = 1;
	ws(j);
	return literal(j, "null") || array(j, ns_elem, arg);
}

static int top_linux(struct json *j, const char *k, size_t n, void *arg)
{
	struct netns_scan *sc = arg;

	if (!ascii(k, n))
		sc->unsure = 1;
	if (!eq_fold(k, n, "linux"))
		return skip(j, 1);
	if (sc->linux_seen++)
		sc->unsure = 1;
	ws(j);
	return literal(j, "null") || object(j, linux_member, arg);
}

/* netns_of: the network namespace the spec raw (len bytes) joins by path,
 * into out (cap bytes): 1, or 0 when it joins none, or -1 when unsure. */
static int netns_of(const char *raw, size_t len, char *out, size_t cap)
{
	struct json j = {raw, raw + len};
	struct netns_scan sc = {out, cap, 0, 0, 0, 0};

	if (!object(&j, top_linux, &sc))
		return -1;
	ws(&j);
	if (sc.unsure || j.p != j.end)
		return -1;
	return sc.found;
}

/* create_untouched: a create of bundle (its --bundle, "" for none) is one
 * that create.go hands to runc as it is, under conf. Else *netjoin says
 * whether its spec joins a network namespace by path (netns_of: 1, with
 * the path in netns, cap bytes; 0; -1 when unsure or unread). */
static int create_untouched(const struct fp_sys *sys, const struct conf *conf, const char *bundle, char *netns,
			    size_t cap, int *netjoin)
{
	struct spec sp = {sys, FP_DEFAULT_STATE_DIR, sizeof FP_DEFAULT_STATE_DIR - 1};
	char path[FP_PATH_MAX];
	char *buf;
	long len;
	int ok;

	*netjoin = -1;
	if (conf->unsure)
		return 0;
	if (conf->state_dir && conf->state_dir_n > 0) {
		sp.state_dir = conf->state_dir;
		sp.state_dir_n = conf->state_dir_n;
	}
	/* The working directory (no --bundle) or a path Go would clean
	 * lexically: left to Go (os.Getwd, filepath.Abs). */
	if (!clean_abs(bundle) || !join(bundle, strlen(bundle), "config.json", path, sizeof path))
		return 0;
	/* Not on the stack: 1 MiB; malloc maps it, only the pages read fault. */
	buf = malloc(FP_SPEC_MAX);
	if (!buf)
		return 0;
	len = sys->read(sys, FP_FILE_SPEC, path, buf, FP_SPEC_MAX);
	ok = len > 0 && conf->always != 1 && spec_untouched(buf, (size_t)len, &sp);
	/* A spec an earlier create edited, whose stamp records the network
	 * namespace that create took out of it (netjoin.go's netjoinMarker):
	 * the Go code puts it back, and may start runc in it. */
	if (!ok && len > 0 && netns)
		*netjoin = memmem(buf, (size_t)len, FP_NETJOIN_MARKER, sizeof FP_NETJOIN_MARKER - 1)
				   ? -1
				   : netns_of(buf, (size_t)len, netns, cap);
	free(buf);
	return ok;
}

static int path_join(char *out, size_t cap, const char *dir, const char *name);
static void sha256_hex(const void *msg, size_t len, int bytes, char *out);

/* The features the Go code cached for a runtime (internal/runc's
 * ProbeFeatures) are at most this long for the C side (runc's are ~5 KiB). */
#define FP_FEATURES_MAX (64L << 10)

/* The features document's annotations: runc's version, once. */
struct features_scan {
	const char *version;
	size_t version_n;
	int annotations, versions;
};

static int feature_annotation(struct json *j, const char *k, size_t n, void *arg)
{
	struct features_scan *f = arg;
	const char *s;
	size_t sn;
	int esc;

	if (!str(j, &s, &sn, &esc))
		return 0;
	if (!IS_KEY(k, n, "org.opencontainers.runc.version"))
		return 1;
	f->version = esc ? NULL : s;
	f->version_n = sn;
	f->versions++;
	return 1;
}

static int features_member(struct json *j, const char *k, size_t n, void *arg)
{
	struct features_scan *f = arg;

	if (!ascii(k, n))
		return 0;
	if (!eq_fold(k, n, "annotations"))
		return skip(j, 1);
	f->annotations++;
	return object(j, feature_annotation, f);
}

/* digits_of reads 1 to 9 decimal digits from s (n bytes) at *i. */
static int digits_of(const char *s, size_t n, size_t *i, int *out)
{
	size_t start = *i;

	*out = 0;
	while (*i < n && s[*i] >= '0' && s[*i] <= '9' && *i - start < 9)
		*out = *out * 10 + (s[(*i)++] - '0');
	return *i > start && !(*i < n && s[*i] >= '0' && s[*i] <= '9');
}

/*
 * runc_before_1_3: the runtime is runc older than 1.3 (1: runc.Features'
 * JoinsUsernsFirst, netjoin.go starts it inside the spec's network
 * namespace), or 1.3 or later (0), as the features the Go code cached in
 * state_dir say: internal/runc's ProbeFeatures names the file by a SHA-256
 * of the runtime's path, inode, size and modification time. -1: no such
 * file, or one the C side does not read as parseVersion does (then the Go
 * code probes, and the next create knows).
 */
static int runc_before_1_3(const struct fp_sys *sys, const char *state_dir, const char *runtime)
{
	char key[FP_PATH_MAX + 80], name[48], path[FP_PATH_MAX];
	struct fp_stat st;
	struct features_scan f = {NULL, 0, 0, 0};
	struct json j;
	char *buf;
	size_t i = 0;
	long len;
	int n, major, minor, ok;

	if (sys->stat(sys, runtime, &st) != 0)
		return -1;
	n = snprintf(key, sizeof key, "%s%c%llu%c%lld%c%lld", runtime, 0, st.ino, 0, st.size, 0, st.mtime_ns);
	if (n < 0 || (size_t)n >= sizeof key)
		return -1;
	memcpy(name, "features-", 9);
	sha256_hex(key, (size_t)n, 8, name + 9);
	memcpy(name + 25, ".json", 6);
	if (!path_join(path, sizeof path, state_dir, name))
		return -1;
	buf = malloc(FP_FEATURES_MAX);
	if (!buf)
		return -1;
	len = sys->read(sys, FP_FILE_FEATURES, path, buf, FP_FEATURES_MAX);
	j.p = buf;
	j.end = buf + (len > 0 ? len : 0);
	ok = len > 0 && object(&j, features_member, &f);
	ws(&j);
	ok = ok && j.p == j.end && f.annotations == 1 && f.versions == 1 && f.version;
	i = 0;
	/* parseVersion: major, a dot, minor's leading digits (Atoi's sign
	 * and the like: unsure). */
	ok = ok && digits_of(f.version, f.version_n, &i, &major) && i < f.version_n && f.version[i++] == '.' &&
	     digits_of(f.version, f.version_n, &i, &minor);
	free(buf);
	if (!ok)
		return -1;
	return major < 1 || (major == 1 && minor < 3);
}

/* release_state_dir: the state dir (into dir, FP_PATH_MAX bytes) in which
 * the constructor may act for a delete of container id of root itself:
 * release what it held (fp_release), or find that nothing of it is left
 * (nothing_left); and, with debug 0, lock a gated create's marker
 * (lock_marker). Not with --debug (delete.go logs where the time went),
 * nor under a test's fault injection (internal/fault), nor with a state
 * dir or root the Go code would spell otherwise. */
static int release_state_dir(const struct conf *conf, const char *root, const char *id, int debug, char *const *envp,
			     char *dir)
{
	const char *sd = FP_DEFAULT_STATE_DIR;
	size_t n = sizeof FP_DEFAULT_STATE_DIR - 1;
	const char *v;

	if (debug || conf->unsure)
		return 0;
	v = fp_getenv(envp, "RUNC_USERNS_TEST_KILL_AT");
	if (v && *v)
		return 0;
	v = fp_getenv(envp, "RUNC_USERNS_TEST_STOP_AT");
	if (v && *v)
		return 0;
	if (conf->state_dir && conf->state_dir_n > 0) {
		sd = conf->state_dir;
		n = conf->state_dir_n;
	}
	if (n >= FP_PATH_MAX || strlen(root) >= FP_PATH_MAX || strlen(id) > FP_ID_MAX)
		return 0;
	memcpy(dir, sd, n);
	dir[n] = '\0';
	return clean_abs(dir) && clean_abs(root);
}

/* plan_release: whether the constructor may release what a stamped
 * delete's container held itself (fp_release), and where. */
static void plan_release(struct fp_plan *plan, const struct conf *conf, const char *root, const char *id, int debug,
			 char *const *envp)
{
	if (!release_state_dir(conf, root, id, debug, envp, plan->state_dir))
		return;
	strcpy(plan->root, root);
	strcpy(plan->id, id);
	plan->release = 1;
}


/* container_paths names what layout.go keeps of container id of runc root
 * root (both clean and absolute) in state_dir, FP_PATH_MAX bytes each: its
 * in-flight marker, <state dir>/inflight/<hash>-<id>, and its container
 * directory, <state dir>/containers/<hash>/<id>. */
static int container_paths(const char *state_dir, const char *root, const char *id, char *marker, char *cdir)
{
	char hash[13], name[FP_ID_MAX + 16];

	fp_root_hash(root, strlen(root), hash);
	snprintf(name, sizeof name, "%s-%s", hash, id);
	return path_join(marker, FP_PATH_MAX, state_dir, "inflight") && path_join(marker, FP_PATH_MAX, marker, name) &&
	       path_join(cdir, FP_PATH_MAX, state_dir, "containers") && path_join(cdir, FP_PATH_MAX, cdir, hash) &&
	       path_join(cdir, FP_PATH_MAX, cdir, id);
}

/*
 * nothing_left: a delete of container id of root, which runc does not have
 * (no state.json), finds nothing of the wrapper's to release: no in-flight
 * marker and no container directory in the state dir. delete.go would run
 * runc's delete (which says the container does not exist, or nothing with
 * --force), then look for those and release nothing: containerd's shim
 * deletes every container a second time, with --force, after the first
 * delete removed it. Every create the wrapper acts on makes its marker
 * before it takes anything and removes it after everything else
 * (inflight.go, delete.go's release), so a container with no marker holds
 * nothing: the pool's records are not read. A marker or directory of any
 * kind (anything but "no such file") leaves the call to the Go code.
 */
static int nothing_left(const struct fp_sys *sys, const struct conf *conf, const char *root, const char *id, int debug,
			char *const *envp)
{
	char dir[FP_PATH_MAX], marker[FP_PATH_MAX], cdir[FP_PATH_MAX];

	return release_state_dir(conf, root, id, debug, envp, dir) && container_paths(dir, root, id, marker, cdir) &&
	       !sys->exists(sys, marker) && !sys->exists(sys, cdir);
}

int fp_decide(char *const *argv, char *const *envp, const struct fp_sys *sys, char *runtime, size_t cap,
	      char **state, long *state_len, struct fp_plan *plan)
{
	char raw[FP_CONFIG_MAX];
	char configured[FP_PATH_MAX];
	const char *v, *path, *root = NULL, *id = NULL, *bundle = NULL;
	struct conf conf = {NULL, 0, 0, -1};
	char *const *e;
	long len;
	int kind, verdict = FP_EXEC, has_config = 1, debug = 0, log_at = 0, log_eq = 0, netjoin = -1;

	/* Not a memset: 9 KiB, three pages to fault in on every call, where
	 * plan_release writes each path before it sets release. */
	if (plan)
		plan->release = 0;
	kind = fast_argv(argv, &root, &id, &bundle, &debug, &log_at, &log_eq);
	if (!envp || kind == ARGV_GO)
		return FP_GO;
	/* Go's os.Environ drops empty entries, and of two entries of one
	 * name the second: runc would get a different environment. The
	 * search for those is quadratic: a huge environment (~190k entries
	 * fit in exec's 2 MiB) is the Go code's, which uses a map. */
	for (e = envp; *e; e++) {
		const char *eq = strchr(*e, '=');
		char *const *f;

		if (!**e || e - envp >= FP_ENV_MAX)
			return FP_GO;
		if (!eq)
			continue;
		for (f = envp; f < e; f++)
			if (strncmp(*f, *e, (size_t)(eq - *e) + 1) == 0)
				return FP_GO;
	}
	v = fp_getenv(envp, "RUNC_USERNS_FASTPATH");
	if (v && strcmp(v, "0") == 0)
		return FP_GO;

	/* config.Load */
	path = fp_getenv(envp, "RUNC_USERNS_CONFIG");
	if (!path || !*path)
		path = DEFAULT_CONFIG;
	len = sys->read(sys, FP_FILE_CONFIG, path, raw, sizeof raw);
	if (len == FP_READ_ENOENT && strcmp(path, DEFAULT_CONFIG) == 0) {
		configured[0] = '\0';
		has_config = 0;
	} else if (len < 0 || !parse_config(raw, (size_t)len, configured, sizeof configured, &conf)) {
		return FP_GO;
	}

	/* With no --root and XDG_RUNTIME_DIR set, runc may take
	 * $XDG_RUNTIME_DIR/runc (not root, or in a user namespace:
	 * oci.RuncRoot): the Go code works out which, where it matters. */
	if (kind != ARGV_FAST && root == default_root) {
		v = fp_getenv(envp, "XDG_RUNTIME_DIR");
		if (v && *v)
			return FP_GO;
	}

	/* A create whose ID runc would refuse is the Go code's (our error,
	 * when the spec concerns us). One whose spec concerns us is the Go
	 * code's too, but its runc may start now, behind the gate (FP_GATE,
	 * "--- create" below): with a config file in effect (the state dir
	 * holds the marker), one --log (the gate), and not under a fault
	 * injection test. */
	if (kind == ARGV_CREATE) {
		if (!valid_id(id))
			return FP_GO;
		if (plan)
			plan->netns[0] = '\0';
		if (!create_untouched(sys, &conf, bundle, plan ? plan->netns : NULL, FP_PATH_MAX, &netjoin)) {
			/* Socket activation: LISTEN_PID names us, and runc
			 * hands the sockets on only when it is runc's pid. */
			v = fp_getenv(envp, "LISTEN_PID");
			if (!plan || !has_config || netjoin < 0 || log_at <= 0 || (v && *v) ||
			    !*(log_eq ? strchr(argv[log_at], '=') + 1 : argv[log_at]) ||
			    !release_state_dir(&conf, root, id, 0, envp, plan->state_dir))
				return FP_GO;
			verdict = FP_GATE;
		}
	}

	if (kind == ARGV_DELETE || kind == ARGV_EXEC) {
		/*
		 * A stamped delete runs runc's delete with the configured
		 * runtime whatever the stamp says (delete.go takes the stamp's
		 * runtime only without a config file), so it can start now.
		 * exec of a stamped container is the Go code's.
		 */
		char **keep = kind == ARGV_DELETE && has_config && state ? state : NULL;

		switch (read_state(sys, root, id, keep, state_len)) {
		case STATE_UNSTAMPED:
			break;
		case STATE_MISSING:
			if (kind != ARGV_DELETE || !nothing_left(sys, &conf, root, id, debug, envp))
				return FP_GO;
			break;
		case STATE_STAMPED:
			if (!keep)
				return FP_GO;
			verdict = FP_SPAWN;
			break;
		default:
			return FP_GO;
		}
	}

	if (!find_runc(sys, configured, fp_getenv(envp, "PATH"), runtime, cap)) {
		if (verdict == FP_SPAWN) {
			free(*state);
			*state = NULL;
		}
		return FP_GO;
	}
	if (verdict == FP_SPAWN && plan)
		plan_release(plan, &conf, root, id, debug, envp);
	if (verdict == FP_GATE) {
		/* runc opens --log before it reads config.json (its app.Before;
		 * 1.1.5 and 1.5.2 checked, fastpath.bats holds them to it):
		 * another runtime may not, and is not started early. */
		const char *base = strrchr(runtime, '/');

		if (strcmp(base ? base + 1 : runtime, "runc") != 0)
			return FP_GO;
		/* A spec that joins a network namespace by path: runc < 1.3
		 * starts in it (netjoin.go, for a pool container; the Go code
		 * checks that the gated runc is where it would have started
		 * it), a later runc joins it itself. Which runc this is, the
		 * features the Go code cached say. */
		if (netjoin) {
			switch (runc_before_1_3(sys, plan->state_dir, runtime)) {
			case 0:
				plan->netns[0] = '\0';
				break;
			case 1:
				break;
			default:
				return FP_GO;
			}
		}
		strcpy(plan->root, root);
		strcpy(plan->id, id);
		plan->log_at = log_at;
		plan->log_eq = log_eq;
	}
	return verdict;
}

/* --- delete: release what the container held, without the Go runtime.
 *
 * A delete of a container the wrapper edited (FP_SPAWN) spends most of its
 * time starting the Go runtime beside the runc it started (~10 ms of a
 * ~33 ms delete on the nested VM measured), only to wait for runc and then
 * make a dozen system calls. For the usual case the constructor makes them
 * itself: it waits for runc (forwarding the signals runc.Run forwards), and
 * when runc deleted the container, releases what delete.go's release
 * would, in the same order, and exits with runc's status.
 *
 * Only what it fully understands: the configured state dir holds the
 * container's in-flight marker with its claim (the owner and host ID the
 * pool gave it; written by the wrapper under the pool's lock, in a
 * directory only root can write), the container directory holds only
 * staging mounts and the record of the network namespace runc < 1.3 was
 * started in (netjoin.go: every pod under containerd or CRI-O on such a
 * runc has one), the pool holds the owner's record in the current format
 * with this container among its members, and, when it was the last one,
 * the pod directory only the pin, its mapping and cgroup files. Anything
 * else (a PID-join pin, a temporary file, an older
 * pool.json, a lock someone holds, an error) and it returns: the Go code
 * then waits for the same runc, already exited, and runs delete.go's
 * release, which is idempotent and reports what went wrong in runc's log
 * format. It returns, too, before doing anything, with --debug (delete.go
 * logs where the time went), under a fault-injection test
 * (internal/fault), and when runc failed or still has the container.
 *
 * It trusts the marker's claim, not the stamp: the claim is what the pool
 * recorded for this container, in the configured state dir only root
 * writes to, and the record it names must agree (owner, host ID, root,
 * member). So where delete.go would release nothing and warn, a stamp that
 * does not verify (the key made again, say), it releases by the claim: the
 * pool's own record of the container, which the Go code's `pool gc` would
 * reclaim later anyway. Every check that can decline comes before the
 * first change but the staging directories' (idempotent, and not what the
 * Go code needs the stamp for): from the pool record's removal on, the only
 * failures left are system calls failing on our own files, after which the
 * Go code, handed the rest, finishes only with a verified stamp, as after a
 * crash at that point. It reads no other record: damage elsewhere in the
 * pool is found by the next call through the Go code, as a crash between
 * two calls would leave it. The temporary files a killed writer leaves
 * are the Go code's to remove (the pool's next exclusive call, or a delete
 * that finds them and returns here).
 */

/* SHA-256 (FIPS 180-4): layout.go's rootHash names a runc root by the
 * first 6 bytes of the digest of its clean path. */
static const uint32_t sha_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha_block(uint32_t h[8], const unsigned char *b)
{
	uint32_t w[64], a, c, d, e, f, g, hh, bb, t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 | (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
	for (i = 16; i < 64; i++)
		w[i] = w[i - 16] + (ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3)) + w[i - 7] +
		       (ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10));
	a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
	for (i = 0; i < 64; i++) {
		t1 = hh + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + sha_k[i] + w[i];
		t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c));
		hh = g, g = f, f = e, e = d + t1, d = c, c = bb, bb = a, a = t1 + t2;
	}
	h[0] += a, h[1] += bb, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

static void sha256(const unsigned char *msg, size_t len, unsigned char out[32])
{
	uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	unsigned char last[128];
	size_t rest = len % 64, pad, i;
	uint64_t bits = (uint64_t)len * 8;

	for (i = 0; i + 64 <= len; i += 64)
		sha_block(h, msg + i);
	memset(last, 0, sizeof last);
	memcpy(last, msg + len - rest, rest);
	last[rest] = 0x80;
	pad = rest < 56 ? 64 : 128;
	for (i = 0; i < 8; i++)
		last[pad - 1 - i] = (unsigned char)(bits >> (8 * i));
	sha_block(h, last);
	if (pad == 128)
		sha_block(h, last + 64);
	for (i = 0; i < 32; i++)
		out[i] = (unsigned char)(h[i / 4] >> (24 - 8 * (i % 4)));
}

/* sha256_hex: the first bytes bytes of msg's SHA-256 in lower-case hex,
 * NUL-ended, into out (2 * bytes + 1): Go's hex.EncodeToString(sum[:bytes]). */
static void sha256_hex(const void *msg, size_t len, int bytes, char *out)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char sum[32];
	int i;

	sha256(msg, len, sum);
	for (i = 0; i < bytes; i++) {
		out[2 * i] = digits[sum[i] >> 4];
		out[2 * i + 1] = digits[sum[i] & 15];
	}
	out[2 * bytes] = '\0';
}

void fp_root_hash(const char *root, size_t n, char out[13])
{
	sha256_hex(root, n, 6, out);
}

/* plain reads a string with no escape into out (cap bytes, NUL-ended):
 * printable ASCII but for <, > and &. encoding/json replaces invalid
 * UTF-8 (a byte past ASCII may not be what Go reads), and writes those
 * three escaped: every string plain accepts, Go writes back as it is. */
static int plain(struct json *j, char *out, size_t cap)
{
	const char *s;
	size_t n, i;
	int esc;

	if (!str(j, &s, &n, &esc) || esc || n >= cap)
		return 0;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] >= 0x80 || s[i] == '<' || s[i] == '>' || s[i] == '&')
			return 0;
	memcpy(out, s, n);
	out[n] = '\0';
	return 1;
}

/* A member seen twice, or not at all, leaves the file to the Go code. */
#define ONCE(bit) ((c->seen & (bit)) ? 0 : (c->seen |= (bit), 1))

/* head_member reads a member a claim and a record share: 1 or 0 as it
 * read, -1 for another key. */
static int head_member(struct json *j, const char *k, size_t n, struct fp_claim *c)
{
	if (IS_KEY(k, n, "owner"))
		return ONCE(1) && plain(j, c->owner, sizeof c->owner);
	if (IS_KEY(k, n, "hostID"))
		return ONCE(2) && u32_value(j, &c->host_id);
	if (IS_KEY(k, n, "size"))
		return ONCE(4) && u32_value(j, &c->size);
	if (IS_KEY(k, n, "root"))
		return ONCE(8) && plain(j, c->root, sizeof c->root);
	return -1;
}

static int claim_member(struct json *j, const char *k, size_t n, void *arg)
{
	struct fp_claim *c = arg;
	int r = head_member(j, k, n, c);

	if (r >= 0)
		return r;
	if (IS_KEY(k, n, "member"))
		return ONCE(16) && plain(j, c->member, sizeof c->member);
	return 0;
}

/* whole_object: raw is one object, read by member, and white space. */
static int whole_object(const char *raw, size_t len, int (*member)(struct json *, const char *, size_t, void *), void *arg)
{
	struct json j = {raw, raw + len};

	if (!object(&j, member, arg))
		return 0;
	ws(&j);
	return j.p == j.end;
}

int fp_parse_claim(const char *raw, size_t len, struct fp_claim *c)
{
	memset(c, 0, sizeof *c);
	return whole_object(raw, len, claim_member, c) && c->seen == 31;
}

/* record_member_id reads one of a record's members into the record. */
static int record_member_id(struct json *j, void *arg)
{
	struct fp_record *r = arg;
	char m[FP_ID_MAX + 1];
	size_t n;

	if (!plain(j, m, sizeof m))
		return 0;
	n = strlen(m) + 1;
	if (r->members_len + n > sizeof r->members)
		return 0;
	memcpy(r->members + r->members_len, m, n);
	r->members_len += n;
	if (++r->nmembers == 1)
		memcpy(r->member, m, n);
	return 1;
}

static int record_member(struct json *j, const char *k, size_t n, void *arg)
{
	struct fp_record *r = arg;
	struct fp_claim *c = &r->head;
	int h = head_member(j, k, n, c);

	if (h >= 0)
		return h;
	if (IS_KEY(k, n, "allocated"))
		return ONCE(16) && plain(j, r->allocated, sizeof r->allocated);
	if (IS_KEY(k, n, "members"))
		return ONCE(32) && array(j, record_member_id, r);
	return 0;
}

#undef ONCE

/* number_at: the n decimal digits at t. */
static int number_at(const char *t, int n)
{
	int v = 0;

	while (n-- > 0)
		v = v * 10 + (*t++ - '0');
	return v;
}

/* utc_seconds: t is a time as the pool writes one (UTC, whole seconds:
 * 2006-01-02T15:04:05Z), a valid date, which time.Time reads. */
static int utc_seconds(const char *t)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int i, y, mo, d;

	if (strlen(t) != sizeof shape - 1)
		return 0;
	for (i = 0; shape[i]; i++)
		if (shape[i] == 'd' ? !(t[i] >= '0' && t[i] <= '9') : t[i] != shape[i])
			return 0;
	y = number_at(t, 4), mo = number_at(t + 5, 2), d = number_at(t + 8, 2);
	if (mo < 1 || mo > 12 || d < 1 || number_at(t + 11, 2) > 23 || number_at(t + 14, 2) > 59 ||
	    number_at(t + 17, 2) > 59)
		return 0;
	return d <= days[mo - 1] + (mo == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0));
}

/* distinct_members: no member empty or listed twice (checkRecord). */
static int distinct_members(const struct fp_record *r)
{
	const char *a, *b;
	int i, k;

	for (i = 0, a = r->members; i < r->nmembers; i++, a += strlen(a) + 1) {
		if (!*a)
			return 0;
		for (k = 0, b = r->members; k < i; k++, b += strlen(b) + 1)
			if (strcmp(a, b) == 0)
				return 0;
	}
	return 1;
}

/* fp_parse_record reads a pool record (pool/records.go's encodeRecord:
 * one JSON object and a newline). */
int fp_parse_record(const char *raw, size_t len, struct fp_record *r)
{
	memset(r, 0, sizeof *r);
	/* members is omitted when empty: such a record is the Go code's; so
	 * is one decodeRecord calls damage (checkRecord, at its own size). */
	return whole_object(raw, len, record_member, r) && r->head.seen == 63 && r->nmembers > 0 && r->head.owner[0] &&
	       r->head.size > 0 && (unsigned long long)r->head.host_id + r->head.size <= 0xffffffffULL &&
	       distinct_members(r) && utc_seconds(r->allocated);
}

/* path_join writes dir "/" name into out (cap bytes); out may be dir. */
static int path_join(char *out, size_t cap, const char *dir, const char *name)
{
	size_t d = strlen(dir), n = strlen(name);

	if (d + 1 + n >= cap)
		return 0;
	memmove(out, dir, d);
	out[d] = '/';
	memcpy(out + d + 1, name, n + 1);
	return 1;
}

/* detach is idmap.Detach: unmount whatever is mounted at path, stacked
 * mounts too, until nothing is. */
static int detach(const char *path)
{
	for (;;) {
		if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
			continue;
		return errno == EINVAL || errno == ENOENT;
	}
}

/* remove_path is os.Remove: unlink, or rmdir a directory; a missing path
 * is fine. */
static int remove_path(const char *path)
{
	if (unlink(path) == 0 || errno == ENOENT)
		return 1;
	if (errno != EISDIR && errno != EPERM)
		return 0;
	return rmdir(path) == 0 || errno == ENOENT;
}

/* read_regular reads the regular file open at fd, whole and at most cap
 * bytes: its length, or -1 (not a regular file, longer, or an error). */
static long read_regular(int fd, char *buf, size_t cap)
{
	struct stat st;
	size_t got = 0;
	ssize_t r;
	char extra;

	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return -1;
	while (got < cap) {
		r = read(fd, buf + got, cap - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return (long)got;
		got += (size_t)r;
	}
	do
		r = read(fd, &extra, 1);
	while (r < 0 && errno == EINTR);
	return r == 0 ? (long)got : -1; /* too long, or an error */
}

/* each_entry calls fn(dir, name, arg) for each entry of dir but . and ..
 * (a missing dir has none) and fails at fn's first failure. */
static int each_entry(const char *dir, int (*fn)(const char *, const char *, void *), void *arg)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int ok = 1;

	if (!d)
		return errno == ENOENT;
	while (ok && (e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			ok = fn(dir, e->d_name, arg);
	closedir(d);
	return ok;
}

static int listed(const char *dir, const char *name, void *names)
{
	const char *const *n;

	(void)dir;
	for (n = names; *n; n++)
		if (strcmp(*n, name) == 0)
			return 1;
	return 0;
}

/* only_names: dir holds no entry but those in names (NULL-ended). */
static int only_names(const char *dir, const char *const *names)
{
	return each_entry(dir, listed, (void *)names);
}

/* A function of a path, for on_path. */
struct path_fn {
	int (*fn)(const char *path);
};

/* on_path calls the path_fn at arg on dir/name. */
static int on_path(const char *dir, const char *name, void *arg)
{
	const struct path_fn *f = arg;
	char path[FP_PATH_MAX];

	return path_join(path, sizeof path, dir, name) && f->fn(path);
}

/* same_file: fd is still what path names (lstat). */
static int same_file(int fd, const char *path)
{
	struct stat held, named;

	return fstat(fd, &held) == 0 && lstat(path, &named) == 0 && held.st_dev == named.st_dev &&
	       held.st_ino == named.st_ino;
}

/* remove_entry removes a staging entry as remove_path does but rmdir
 * first: an entry is a directory but for a staged bind of a file, and a
 * dozen unlinks answering EISDIR cost a delete ~0.1 ms on the VM measured.
 * A mount point in our namespace answers EBUSY (errno is left as the last
 * call set it). */
static int remove_entry(const char *path)
{
	if (rmdir(path) == 0 || errno == ENOENT)
		return 1;
	return errno == ENOTDIR && (unlink(path) == 0 || errno == ENOENT);
}

/* detach_remove removes a staging entry, detaching what is mounted on it
 * only when removing says something is (EBUSY): the create detached its
 * staging mounts once runc held them, so mostly nothing is, and an
 * umount2 tried on each entry first answered EINVAL a dozen times a
 * delete. */
static int detach_remove(const char *path)
{
	if (remove_entry(path))
		return 1;
	return errno == EBUSY && detach(path) && remove_entry(path);
}

/* remove_staged is create.go's removeStaged for a container directory that
 * holds only rootfs, mounts and layers, and the netns record (a file). */
static int remove_staged(const char *cdir)
{
	/* The staging mounts, then the record. */
	static const char *const names[] = {"rootfs", "mounts", "layers", "netns", NULL};
	static struct path_fn detach_remove_fn = {detach_remove};
	char path[3][FP_PATH_MAX], rec[FP_PATH_MAX];
	int i;

	if (!only_names(cdir, names))
		return 0;
	/* The record first: a file whatever it holds (runc has deleted the
	 * container; nothing reads it any more). Anything else by that name
	 * is left to the Go code. */
	if (!path_join(rec, sizeof rec, cdir, "netns") || (unlink(rec) != 0 && errno != ENOENT))
		return 0;
	for (i = 0; i < 3; i++)
		if (!path_join(path[i], sizeof path[i], cdir, names[i]) || !detach(path[i]))
			return 0;
	/* stagedEntries: what mounts and layers hold, each detached, then
	 * removed (a staged bind of a file is a file), in one pass. */
	for (i = 1; i < 3; i++)
		if (!each_entry(path[i], on_path, &detach_remove_fn))
			return 0;
	for (i = 0; i < 3; i++)
		if (!remove_path(path[i]))
			return 0;
	/* The container directory is a mount of its own while a create
	 * stages (stageContainerDir), until its tail detaches it. */
	if (!detach_remove(cdir))
		return 0;
	/* The root's directory, if now empty. */
	*strrchr(cdir, '/') = '\0';
	rmdir(cdir);
	return 1;
}

static const char *const pod_files[] = {"userns", "mapping", "cgroup", NULL};

/* pod_dir names owner's pod directory in dir (FP_PATH_MAX bytes). */
static int pod_dir(char *dir, const char *state_dir, const char *owner)
{
	return path_join(dir, FP_PATH_MAX, state_dir, "pods") && path_join(dir, FP_PATH_MAX, dir, owner);
}

/* pod_dir_plain: owner's pod directory holds only the pin, its mapping and
 * the cgroup file (or is gone). */
static int pod_dir_plain(const char *state_dir, const char *owner)
{
	char dir[FP_PATH_MAX];

	return pod_dir(dir, state_dir, owner) && only_names(dir, pod_files);
}

/* append_str appends s to buf (cap bytes, *n used). */
static int append_str(char *buf, size_t cap, size_t *n, const char *s)
{
	size_t l = strlen(s);

	if (*n + l >= cap)
		return 0;
	memcpy(buf + *n, s, l + 1);
	*n += l;
	return 1;
}

/*
 * rewrite_record replaces the record at path (file name name) with r
 * without member id, as the pool's put does: the new content written to
 * ".<name>.tmp" beside it, renamed over it. The content is encodeRecord's
 * byte for byte: the fields in pool.Allocation's order, and every string
 * as read (plain ASCII without escapes, which encoding/json writes as is:
 * it escapes only what the reader refused, quotes, backslashes, controls
 * and <, >, &).
 */
static int rewrite_record(const char *path, const char *name, const struct fp_record *r, const char *id)
{
	char buf[FP_RECORD_MAX + 64], num[32], tmp[FP_PATH_MAX];
	const char *m = r->members, *sep = "";
	size_t n = 0, w = 0;
	int found = 0, fd, i;
	ssize_t k;

	snprintf(num, sizeof num, "%u", r->head.host_id);
	if (!append_str(buf, sizeof buf, &n, "{\"owner\":\"") || !append_str(buf, sizeof buf, &n, r->head.owner) ||
	    !append_str(buf, sizeof buf, &n, "\",\"hostID\":") || !append_str(buf, sizeof buf, &n, num))
		return 0;
	snprintf(num, sizeof num, "%u", r->head.size);
	if (!append_str(buf, sizeof buf, &n, ",\"size\":") || !append_str(buf, sizeof buf, &n, num) ||
	    !append_str(buf, sizeof buf, &n, ",\"root\":\"") || !append_str(buf, sizeof buf, &n, r->head.root) ||
	    !append_str(buf, sizeof buf, &n, "\",\"allocated\":\"") || !append_str(buf, sizeof buf, &n, r->allocated) ||
	    !append_str(buf, sizeof buf, &n, "\",\"members\":["))
		return 0;
	for (i = 0; i < r->nmembers; i++, m += strlen(m) + 1) {
		if (!found && strcmp(m, id) == 0) {
			found = 1;
			continue;
		}
		if (!append_str(buf, sizeof buf, &n, sep) || !append_str(buf, sizeof buf, &n, "\"") ||
		    !append_str(buf, sizeof buf, &n, m) || !append_str(buf, sizeof buf, &n, "\""))
			return 0;
		sep = ",";
	}
	/* Not a member (the Go code's to judge), or the last one (the
	 * record goes instead). */
	if (!found || r->nmembers < 2 || !append_str(buf, sizeof buf, &n, "]}\n"))
		return 0;
	if (snprintf(tmp, sizeof tmp, "%.*s.%s.tmp", (int)(strrchr(path, '/') + 1 - path), path, name) >= (int)sizeof tmp)
		return 0;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return 0;
	while (w < n) {
		k = write(fd, buf + w, n - w);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		w += (size_t)k;
	}
	if (close(fd) != 0 || w != n || rename(tmp, path) != 0) {
		unlink(tmp);
		return 0;
	}
	return 1;
}

/* pool_leave is pool.Leave(owner, id): under the pool's lock, id leaves
 * the owner's record, which goes with its last member. *freed tells
 * whether it went (0: another member stays, or no pool in state_dir,
 * nothing to do). */
static int pool_leave(const char *state_dir, const struct fp_claim *claim, const char *root, const char *id,
		      int *freed)
{
	char lock[FP_PATH_MAX], rec[FP_PATH_MAX], v1[FP_PATH_MAX], name[FP_ID_MAX + 16], buf[FP_RECORD_MAX];
	static struct fp_record r; /* 9 KiB: not on the stack */
	struct stat st;
	long len;
	int lfd = -1, fd, ok = 0;

	*freed = 0;
	snprintf(name, sizeof name, "%u-%s", claim->host_id, claim->owner);
	if (!path_join(lock, sizeof lock, state_dir, "pool.lock") || !path_join(v1, sizeof v1, state_dir, "pool.json") ||
	    !path_join(rec, sizeof rec, state_dir, "pool.d") || !path_join(rec, sizeof rec, rec, name))
		return 0;
	/* poolExists: neither pool.d nor pool.json, nothing was allocated. */
	if (lstat(v1, &st) != 0 && errno == ENOENT) {
		char dir[FP_PATH_MAX];

		if (!path_join(dir, sizeof dir, state_dir, "pool.d"))
			return 0;
		if (lstat(dir, &st) != 0 && errno == ENOENT)
			return 1;
	}
	/* pool.lock as the pool's lock() takes it: the file it locked must
	 * still be the one named (else the Go code retries). */
	lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lfd < 0)
		return 0;
	while (flock(lfd, LOCK_EX) != 0)
		if (errno != EINTR)
			goto out;
	if (!same_file(lfd, lock))
		goto out;
	/* An older release's pool.json is converted by the Go code. */
	if (lstat(v1, &st) == 0 || errno != ENOENT)
		goto out;
	fd = open(rec, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		goto out;
	len = read_regular(fd, buf, sizeof buf);
	close(fd);
	if (len < 0 || !fp_parse_record(buf, (size_t)len, &r))
		goto out;
	if (strcmp(r.head.owner, claim->owner) != 0 || r.head.host_id != claim->host_id || strcmp(r.head.root, root) != 0)
		goto out; /* not what the claim says */
	if (r.nmembers == 1 && strcmp(r.member, id) == 0) {
		/* The pin goes next: the pod directory must hold nothing
		 * unpin_pod leaves to the Go code, checked before the record
		 * goes (the Go code, given the release from here, names the
		 * owner from the stamp, which it may not be able to verify). */
		if (!pod_dir_plain(state_dir, claim->owner) || unlink(rec) != 0)
			goto out;
		*freed = 1;
	} else if (!rewrite_record(rec, name, &r, id)) {
		goto out;
	}
	ok = 1;
out:
	close(lfd); /* drops the lock */
	return ok;
}

/* unpin_pod is create.go's unpinPod for a pod directory that holds only
 * the pin, its mapping and the cgroup file. */
static int unpin_pod(const char *state_dir, const char *owner)
{
	const char *const *files = pod_files;
	char dir[FP_PATH_MAX], path[FP_PATH_MAX];
	int i;

	if (!pod_dir(dir, state_dir, owner) || !only_names(dir, files))
		return 0;
	if (!path_join(path, sizeof path, dir, "userns") || !detach(path))
		return 0;
	for (i = 0; files[i]; i++)
		if (!path_join(path, sizeof path, dir, files[i]) || !remove_path(path))
			return 0;
	return rmdir(dir) == 0 || errno == ENOENT;
}

int fp_release(const char *state_dir, const char *root, const char *id)
{
	char marker[FP_PATH_MAX], cdir[FP_PATH_MAX], path[FP_PATH_MAX], buf[FP_PATH_MAX + 2048];
	struct fp_claim claim;
	struct stat st;
	long len;
	int fd, ok = 0, freed;

	if (!valid_id(id) || !clean_abs(state_dir) || !clean_abs(root))
		return 0;
	/* holdForRelease: the marker, locked without waiting, still the file
	 * its path names, and runc without the container. */
	if (!container_paths(state_dir, root, id, marker, cdir))
		return 0;
	fd = open(marker, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	if (flock(fd, LOCK_EX | LOCK_NB) != 0 || !same_file(fd, marker))
		goto out;
	if (!path_join(path, sizeof path, root, id) || !path_join(path, sizeof path, path, "state.json") ||
	    lstat(path, &st) == 0 || errno != ENOENT)
		goto out;
	len = read_regular(fd, buf, sizeof buf);
	if (len <= 0 || !fp_parse_claim(buf, (size_t)len, &claim) || strcmp(claim.member, id) != 0 ||
	    strcmp(claim.root, root) != 0 || !valid_id(claim.owner))
		goto out;
	/* release: the container's leftovers, its range, the pod's pin when
	 * it was the last member, the marker last. */
	if (!remove_staged(cdir))
		goto out;
	if (!pool_leave(state_dir, &claim, root, id, &freed))
		goto out;
	if (freed && !unpin_pod(state_dir, claim.owner))
		goto out;
	ok = unlink(marker) == 0;
out:
	close(fd);
	return ok;
}

/* --- the real system and the constructor. */

long fp_read_file(const struct fp_sys *sys, int which, const char *path, char *buf, size_t cap)
{
	long len;
	int fd;

	(void)sys;
	(void)which;
	/* O_NONBLOCK: a FIFO must not hang us; the Go code opens it as before. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? FP_READ_ENOENT : FP_READ_FAIL;
	len = read_regular(fd, buf, cap);
	close(fd);
	return len < 0 ? FP_READ_FAIL : len;
}

static int real_stat(const struct fp_sys *sys, const char *path, struct fp_stat *out)
{
	struct stat st;

	(void)sys;
	if (stat(path, &st) != 0)
		return -1;
	out->dev = (unsigned long long)st.st_dev;
	out->ino = (unsigned long long)st.st_ino;
	out->mode = (unsigned int)st.st_mode;
	out->size = (long long)st.st_size;
	out->mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	return 0;
}

static int real_exists(const struct fp_sys *sys, const char *path)
{
	struct stat st;

	(void)sys;
	/* Anything but "no such file" may be a pin the Go code finds. */
	return lstat(path, &st) == 0 || errno != ENOENT;
}

/* The early runc while the constructor waits for it, for forward() (0:
 * none, or it has exited). */
static volatile pid_t forward_to;

static void forward(int sig)
{
	int saved = errno;
	pid_t pid = forward_to;

	if (pid > 0)
		kill(pid, sig);
	errno = saved;
}

/* runc.ShortSignals: what a caller sends to stop or poke a process. */
static const int short_signals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
#define NSHORT ((int)(sizeof short_signals / sizeof short_signals[0]))

int fp_short_signals(const int **list)
{
	*list = short_signals;
	return NSHORT;
}

/*
 * finish_delete waits for the early runc, forwarding short_signals to it
 * as runc.Wait would, and when runc deleted the container and fp_release
 * released what it held, reaps runc and exits with its status (0). Else it
 * returns with runc unreaped (waitid WNOWAIT: its pid stays taken, so a
 * forwarded signal can never reach another process) and the caller's
 * signal dispositions back: the Go code waits for it and releases. A
 * signal that arrives after runc has exited is dropped, as the Go code
 * drops it (runc.Run): the release goes on to its end (a pool lock that
 * never comes, there as in Go, yields to SIGKILL only).
 */
static void finish_delete(pid_t pid, const struct fp_plan *plan)
{
	struct sigaction fwd, old[NSHORT];
	siginfo_t si;
	int i, r, status;

	memset(&fwd, 0, sizeof fwd);
	fwd.sa_handler = forward;
	fwd.sa_flags = SA_RESTART;
	sigemptyset(&fwd.sa_mask);
	forward_to = pid;
	for (i = 0; i < NSHORT; i++)
		sigaction(short_signals[i], &fwd, &old[i]);
	do {
		memset(&si, 0, sizeof si);
		r = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT);
	} while (r != 0 && errno == EINTR);
	forward_to = 0;
	if (r == 0 && si.si_code == CLD_EXITED && si.si_status == 0 && fp_release(plan->state_dir, plan->root, plan->id)) {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	for (i = 0; i < NSHORT; i++)
		sigaction(short_signals[i], &old[i], NULL);
}

/* The delete the constructor started (FP_SPAWN): runc's pid, and the
 * state.json it read first. fp_early hands them to the Go code. */
static pid_t early_pid;
static char *early_state;
static long early_state_len;

/* Whether the kernel reaps our children without a wait: SIGCHLD ignored, or
 * SA_NOCLDWAIT, as the caller left them. An early runc could then be gone
 * before the Go code waits for it (waitid: ECHILD), and a delete that
 * succeeded would fail. The Go runtime installs its own SIGCHLD handler, so
 * the Go code's own runc is never reaped behind its back. */
static int children_reaped_by_kernel(void)
{
	struct sigaction sa;

	if (sigaction(SIGCHLD, NULL, &sa) != 0)
		return 1;
	return sa.sa_handler == SIG_IGN || (sa.sa_flags & SA_NOCLDWAIT);
}

int fp_early(char **state, long *state_len)
{
	pid_t pid = early_pid;

	*state = early_state;
	*state_len = early_state_len;
	early_pid = 0;
	early_state = NULL;
	early_state_len = 0;
	return (int)pid;
}

/* --- create: runc starts behind a gate while the Go runtime starts.
 *
 * runc spends ~15 ms starting (its own Go runtime and nsenter) before it
 * opens --log, and only then reads config.json (app.Before; the create
 * action after it). The wrapper's Go code spends ~12 ms (its runtime, then
 * the pool, the pin, the idmapped mounts and the edited spec) before it can
 * let runc read the spec. Started here, runc's start-up overlaps ours on
 * the other core, and waits at the gate: its --log names
 * /proc/<our pid>/fd/<n>, an O_PATH descriptor of a FIFO (made in the state
 * dir and unlinked at once), so runc's open(O_WRONLY) blocks there (a
 * FIFO's open waits for a reader) until the Go code opens the same path
 * for reading, after it has written the spec (early.go's gatedRunc). The
 * Go code then copies what runc writes to the real --log file. (An
 * anonymous pipe would not do: its open through /proc never waits.)
 * Whatever the Go code decides instead (an
 * error, a plain exec, stdio it must replace, a runc in another network
 * namespace than it would start runc in) it kills runc first, which has
 * read nothing.
 *
 * A spec that joins a network namespace by path (every CRI pod's): runc
 * 1.3 and later join it themselves; an older runc is started inside it,
 * as netjoin.go starts it for a pool container (runc < 1.3 cannot join it
 * after the pod's user namespace). Which runc it is, the features the Go
 * code cached for it say (runc_before_1_3); the child enters the
 * namespace before its exec, and the Go code lets through only a runc in
 * the namespace it recorded (or in ours, without netjoin).
 *
 * What holds it together:
 * - the container's in-flight marker is locked here, as lockInflight
 *   locks it (one try; locked by another, or runc has the container: no
 *   gate), on a descriptor above every one open and inheritable: runc
 *   and its init hold the lock from the start, as inheritMarker arranges
 *   in the Go code; the Go code takes this descriptor as its marker.
 * - runc gets SIGKILL when we die (PR_SET_PDEATHSIG, checked against a
 *   parent that died before it was set): a runc still at the gate would
 *   otherwise wait there for ever. The signal follows the thread that
 *   started runc, this one, which becomes the Go runtime's main thread
 *   and lasts as long as the process.
 */

/* The create started behind the gate; fp_gated hands it to the Go code. */
static pid_t gated_pid;
static int gated_marker = -1, gated_gate = -1, gated_created;

int fp_gated(int *marker, int *created, int *gate)
{
	pid_t pid = gated_pid;

	*marker = gated_marker;
	*created = gated_created;
	*gate = gated_gate;
	gated_pid = 0;
	gated_marker = gated_gate = -1;
	return (int)pid;
}

static void remove_marker(const struct fp_plan *plan)
{
	char marker[FP_PATH_MAX], cdir[FP_PATH_MAX];

	if (container_paths(plan->state_dir, plan->root, plan->id, marker, cdir))
		unlink(marker);
}

/* highest_fd: the highest open descriptor (-1: none, or unknown: -2). */
static int highest_fd(void)
{
	char buf[4096] __attribute__((aligned(8)));
	int dir, hi = -1;
	long n;

	dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -2;
	while ((n = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
		long off = 0;

		while (off < n) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *d = (void *)(buf + off);
			char *end;
			long fd = strtol(d->name, &end, 10);

			if (end != d->name && !*end && fd != dir && fd > hi)
				hi = (int)fd;
			off += d->reclen;
		}
	}
	close(dir);
	return n < 0 ? -2 : hi;
}

/* lock_marker is one try of lockInflight: the marker of plan's container
 * locked, still named by its path, and runc without the container; an
 * inheritable descriptor above every one open, or -1. *created: this call
 * made the file (then it is removed again when nothing is kept). */
static int lock_marker(const struct fp_plan *plan, int *created)
{
	char marker[FP_PATH_MAX], cdir[FP_PATH_MAX], state[FP_PATH_MAX];
	struct stat st;
	int fd, hi, kept = -1;

	if (!container_paths(plan->state_dir, plan->root, plan->id, marker, cdir) ||
	    !path_join(state, sizeof state, plan->root, plan->id) || !path_join(state, sizeof state, state, "state.json"))
		return -1;
	/* No inflight directory yet (no create ever ran): the Go code makes it. */
	fd = open(marker, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	*created = fd >= 0;
	if (fd < 0 && errno == EEXIST)
		fd = open(marker, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0 && same_file(fd, marker) && lstat(state, &st) != 0 && errno == ENOENT &&
	    (hi = highest_fd()) >= 0)
		kept = fcntl(fd, F_DUPFD, hi + 1);
	/* Ours, locked: unlinked as markers are, under their lock. */
	if (kept < 0 && *created)
		unlink(marker);
	close(fd); /* a lock stays with the open file description */
	return kept;
}

/* make_gate: the gate, a FIFO made in state_dir for process self and
 * named only by the O_PATH descriptor returned (-1: none). A FIFO, not a
 * pipe: an open of a pipe (pipefs) never waits. */
static int make_gate(const char *state_dir, pid_t self)
{
	char fifo[FP_PATH_MAX], name[32];
	int gate;

	snprintf(name, sizeof name, ".gate-%d", (int)self);
	if (!path_join(fifo, sizeof fifo, state_dir, name))
		return -1;
	unlink(fifo);
	if (mkfifo(fifo, 0600) != 0)
		return -1;
	gate = open(fifo, O_PATH | O_CLOEXEC);
	unlink(fifo);
	return gate;
}

/* open_netns: the network namespace file at path, for the child's setns
 * (-1: not one). Not a FIFO's wait, nor a terminal made ours. */
static int open_netns(const char *path)
{
	struct statfs fs;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd >= 0 && (fstatfs(fd, &fs) != 0 || fs.f_type != NSFS_MAGIC)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/*
 * The wake-up after vfork. The vfork child runs on our CPU, and its exec
 * wakes us there, behind the runc it has become: on the machine measured
 * (2026-11-27, two vCPUs) the constructor then waited 0.7-1.8 ms for that
 * CPU (runc's start-up runs until it is preempted) while the other one was
 * idle (a sched_switch trace, 15 creates), and the Go code opened the gate
 * that much later. So the child, just before its exec, takes its CPU out
 * of our affinity (the parent is asleep: its mask changes, it does not
 * move); its exec then wakes us on another CPU, and we put our mask back
 * (restore_cpus) before anything else runs, so the Go runtime and what it
 * starts see the mask we started with. runc's own mask is never touched.
 * With one CPU allowed, or a mask this cannot read or set, nothing changes.
 */
static cpu_set_t start_cpus;
static volatile int cpus_moved; /* written by the vfork child */

/* leave_cpu, in the vfork child: the parent's mask without this CPU. */
static void leave_cpu(pid_t parent)
{
	cpu_set_t away = start_cpus;
	int cpu = sched_getcpu();

	if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &away) || CPU_COUNT(&away) < 2)
		return;
	CPU_CLR(cpu, &away);
	if (sched_setaffinity(parent, sizeof away, &away) == 0)
		cpus_moved = 1;
}

/* restore_cpus, in the parent once vfork has returned. */
static void restore_cpus(void)
{
	if (cpus_moved)
		sched_setaffinity(0, sizeof start_cpus, &start_cpus);
}

/*
 * gate_create starts runtime with argv, --log swapped for the gate, or
 * starts nothing (the Go code then runs runc as without it).
 */
static void gate_create(const char *runtime, char **argv, char **envp, const struct fp_plan *plan)
{
	static char log_arg[64];
	char *saved = argv[plan->log_at];
	sigset_t all, old;
	pid_t self = getpid(), pid;
	int marker, gate, created;
	volatile int netns = -1; /* read after vfork's return */

	/* The network namespace runc starts in (plan->netns): opened here,
	 * entered by the child; the Go code checks the one it is in. */
	if (plan->netns[0] && (netns = open_netns(plan->netns)) < 0)
		return;
	gate = make_gate(plan->state_dir, self);
	marker = gate < 0 ? -1 : lock_marker(plan, &created);
	if (marker < 0) {
		if (gate >= 0)
			close(gate);
		if (netns >= 0)
			close(netns);
		return;
	}
	snprintf(log_arg, sizeof log_arg, "%s/proc/%d/fd/%d", plan->log_eq ? "--log=" : "", (int)self, gate);
	argv[plan->log_at] = log_arg;
	/* The child runs on our stack until it execs (vfork): none of the
	 * caller's signal handlers may run there. */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	cpus_moved = 0;
	if (sched_getaffinity(0, sizeof start_cpus, &start_cpus) != 0)
		CPU_ZERO(&start_cpus);
	pid = vfork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != self || (netns >= 0 && setns(netns, CLONE_NEWNET) != 0))
			_exit(127);
		leave_cpu(self);
		sigprocmask(SIG_SETMASK, &old, NULL);
		execve(runtime, argv, envp);
		_exit(127);
	}
	restore_cpus();
	sigprocmask(SIG_SETMASK, &old, NULL);
	argv[plan->log_at] = saved;
	if (netns >= 0)
		close(netns);
	if (pid < 0) {
		if (created)
			remove_marker(plan);
		close(gate);
		close(marker);
		return;
	}
	gated_pid = pid;
	gated_marker = marker;
	gated_created = created;
	gated_gate = gate;
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/*
 * How much of the writable segment past its file-backed part (the start
 * of .bss) prefault_image maps in. The Go linker puts the runtime's
 * globals there, the large buffers (crypto's 32 MiB DRBG memory) after
 * them: a Go-path call writes ~25 pages in the first 180 KiB.
 */
#define FP_BSS_PREFAULT (256L << 10)

/* populate_linux.c: whether to map in ahead, decided once. */
extern int populate;
void populate_decide(const char *env);

/* prefault_image's work on the executable's program headers. */
static int prefault_segments(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t page = *(const uintptr_t *)arg, relro_end = 0;
	size_t i;

	(void)size;
	/* glibc makes the segment's head read-only (RELRO) after relocating:
	 * MADV_POPULATE_WRITE fails on it, so the write range starts after. */
	for (i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO)
			relro_end = (info->dlpi_addr + info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz) & ~(page - 1);
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr, end, len = ph->p_memsz;
		int advice = MADV_POPULATE_READ;

		if (ph->p_type != PT_LOAD)
			continue;
		if (ph->p_flags & PF_W) {
			advice = MADV_POPULATE_WRITE;
			if (len > ph->p_filesz + FP_BSS_PREFAULT)
				len = ph->p_filesz + FP_BSS_PREFAULT;
		}
		end = (start + len + page - 1) & ~(page - 1);
		start &= ~(page - 1);
		if (advice == MADV_POPULATE_WRITE && start < relro_end)
			start = relro_end;
		if (start < end)
			madvise((void *)start, end - start, advice);
	}
	return 1; /* the first object is the executable: stop there */
}

/*
 * prefault_image maps the binary's code, read-only data and data into
 * the page tables in one call each, before the Go runtime starts.
 *
 * A Go-path call (create, and delete of an edited container) otherwise
 * takes ~130 page faults on them: fault-around maps 16 pages of the page
 * cache at a time, data and .bss fault page by page. A fault is cheap on
 * bare metal (~0.25 us) but costs 14-20 us on the nested VM measured (a
 * trap to the hypervisor each), where MADV_POPULATE_READ maps the whole
 * 5.6 MiB of code and read-only data in ~0.17 ms (0.12 us a page) and
 * MADV_POPULATE_WRITE ~0.8 us a page (bench/README, seventh round).
 *
 * Only a hint: a kernel before 5.14 answers EINVAL, and any error leaves
 * the pages to be faulted in as before. The fast path's exec does not
 * call it, since runc replaces this image at once; nor does a process
 * where a fault costs about what populating a page does (populate_linux.c):
 * there it only adds the pages never touched.
 */
static void prefault_image(void)
{
	uintptr_t page = (uintptr_t)getauxval(AT_PAGESZ);

	if (page)
		dl_iterate_phdr(prefault_segments, &page);
}

/*
 * fp_initial_argv finds argc and argv from envp, the process's initial
 * environment array, and argv[0] (progname): the start-up stack holds argc,
 * then argv's pointers and its NULL, then envp's (the System V ABI's
 * process start-up layout). -1 when it does not look so, within FP_ARGC_MAX
 * arguments.
 */
int fp_initial_argv(char **envp, const char *progname, int *argc, char ***argv)
{
	char **p;
	int n;

	if (!envp || !progname || envp[-1] != NULL)
		return -1;
	for (n = 1, p = envp - 2; n <= FP_ARGC_MAX; n++, p--) {
		if (!*p)
			return -1;
		if (*p == progname) {
			if ((long)p[-1] != n)
				return -1;
			*argc = n;
			*argv = p;
			return 0;
		}
	}
	return -1;
}

/* fastpath is the constructor's work (fastpath_init): decide, then exec
 * runc, start it (a delete), or return to the Go code, which maps the image
 * in first. */
static void fastpath(int argc, char **argv, char **envp)
{
	static const struct fp_sys sys = {fp_read_file, real_stat, real_exists, NULL};
	static struct fp_plan plan; /* not on the stack: 8 KiB of paths */
	char runtime[FP_PATH_MAX];
	char *state = NULL, *self;
	long state_len = 0;
	pid_t pid;
	int saved = errno, verdict;

	if (argc < 1)
		goto out;
	verdict = fp_decide(argv, envp, &sys, runtime, sizeof runtime, &state, &state_len, &plan);
	if (verdict == FP_GO)
		goto out;
	/*
	 * runc's argv is ours with the runtime's path first: our own argv
	 * array, argv[0] swapped for the call and put back before anything
	 * else reads it (the Go runtime reads this same array). No copy: a
	 * malloc here was the pass-through's only one, and musl's first
	 * malloc costs four system calls and two page faults.
	 */
	self = argv[0];
	argv[0] = runtime;
	if (verdict == FP_EXEC) {
		execve(runtime, argv, envp);
		argv[0] = self;
		/* The Go code tries the same exec and reports why it failed. */
	} else if (verdict == FP_GATE) {
		if (!children_reaped_by_kernel())
			gate_create(runtime, argv, envp, &plan);
	} else if (!children_reaped_by_kernel() && posix_spawn(&pid, runtime, NULL, NULL, argv, envp) == 0) {
		/* runc.Run's child: our stdio and inherited fds, our signal
		 * mask, our environment. The C library reports a failed exec
		 * here (and reaps that child); the Go code then runs runc
		 * itself and reports why it failed. */
		argv[0] = self;
		early_pid = pid;
		early_state = state;
		early_state_len = state_len;
		state = NULL;
		if (plan.release)
			finish_delete(pid, &plan);
	}
	argv[0] = self;
	free(state);
out:
	/* Where a fault is dear, the Go runtime's memory and the image are
	 * mapped in ahead (populate_linux.c). */
	populate_decide(envp ? fp_getenv(envp, "RUNC_USERNS_POPULATE") : NULL);
	if (populate)
		prefault_image();
	/*
	 * The Go code handles the call. Its threads come from pthread_create
	 * and barely use malloc (cgo's thread start-up does): one arena for
	 * all of them, not one 64 MiB arena per thread, each with its first
	 * pages to fault in (~0.3 ms a call measured on the nested VM).
	 */
#ifdef M_ARENA_MAX /* glibc's */
	mallopt(M_ARENA_MAX, 1);
#endif
	errno = saved;
}

/*
 * Constructors run before main and so before the Go runtime. glibc calls
 * them with argc, argv and envp; musl with nothing, but it has set environ
 * to the initial environment array and program_invocation_name to argv[0]
 * by then, which give argc and argv (fp_initial_argv; any doubt leaves the
 * call to the Go code, as argc 0 does). runc.Exec's argv: the runtime's
 * path, then ours from argv[1] on; our environment as is.
 */
__attribute__((constructor)) static void fastpath_init(int argc, char **argv, char **envp)
{
#ifndef __GLIBC__
	envp = environ;
	if (fp_initial_argv(envp, program_invocation_name, &argc, &argv) != 0)
		argc = 0;
#endif
	fastpath(argc, argv, envp);
}
