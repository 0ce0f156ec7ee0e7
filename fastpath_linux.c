//go:build cgo

/*
 * The pass-through fast path: a constructor that runs before the Go runtime
 * starts (as runc's nsexec does) and, for a call the Go code would answer
 * with a bare exec of the real runc, execs it at once. The Go runtime's
 * start-up alone costs ~200 page faults, several milliseconds on a nested
 * VM; state, kill and start are called for every container.
 *
 * It is an optimisation and nothing else: it never prints, never fails a
 * call and never changes argv. Whatever it does not fully understand (an
 * unknown flag, a config key, an escape in a string, a relative PATH entry
 * before runc is found, a failed execve) makes it return, and the Go code
 * handles the call exactly as without it, errors included. So it only
 * execs when the Go code would: same command, same config verdict, same
 * runc, same argv[0], same environment.
 *
 * RUNC_USERNS_FASTPATH=0 in the environment turns it off.
 *
 * The price: with cgo linked in, the Go runtime starts through glibc and
 * makes its threads with pthread_create, ~50 more page faults (~1.5 ms on
 * the nested VM measured) on the calls the Go code handles (create,
 * delete, exec); each pass-through call saves ~7 ms.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
 * create, run, delete, exec, features (the Go code acts on them), the
 * admin verbs, or anything else.
 */
static const char *const fast_commands[] = {
	"start", "state", "kill", "list", "ps", "events", "pause", "resume", "update", NULL,
};

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

/* fast_argv: argv's command is one of fast_commands, after global flags
 * that oci.Parse knows (and no --help or --version). */
static int fast_argv(char *const *argv)
{
	const char *name;
	size_t n;
	int has_value, i;

	if (!argv || !argv[0])
		return 0;
	for (i = 1; argv[i]; i++) {
		if (!split_flag(argv[i], &name, &n, &has_value))
			break;
		if (in(bool_flags, name, n))
			continue;
		if (!in(value_flags, name, n))
			return 0; /* help, version, or runc's own error */
		if (!has_value) {
			if (!argv[i + 1])
				return 0;
			i++;
		}
	}
	if (argv[i] && strcmp(argv[i], "--") == 0)
		i++;
	return argv[i] && in(fast_commands, argv[i], strlen(argv[i]));
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

static void ws(struct json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
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

/* u32 reads what encoding/json stores in a uint32: digits only. */
static int u32(struct json *j)
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
	return !(j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'));
}

static int boolean(struct json *j)
{
	ws(j);
	if (j->end - j->p >= 4 && memcmp(j->p, "true", 4) == 0) {
		j->p += 4;
		return 1;
	}
	if (j->end - j->p >= 5 && memcmp(j->p, "false", 5) == 0) {
		j->p += 5;
		return 1;
	}
	return 0;
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

#define IS(lit) (n == sizeof(lit) - 1 && memcmp(k, lit, n) == 0)

/* pool.Range */
static int range_member(struct json *j, const char *k, size_t n, void *arg)
{
	(void)arg;
	return (IS("hostID") || IS("size")) && u32(j);
}

static int ranges(struct json *j)
{
	if (!eat(j, '['))
		return 0;
	if (eat(j, ']'))
		return 1;
	do {
		if (!object(j, range_member, NULL))
			return 0;
	} while (eat(j, ','));
	return eat(j, ']');
}

/* config.Userns */
static int userns_member(struct json *j, const char *k, size_t n, void *arg)
{
	const char *s;
	size_t sn;
	int esc;

	(void)arg;
	if (IS("mode")) {
		/* config.Parse: "" (the default), annotation, always or off. */
		return str(j, &s, &sn, &esc) && !esc &&
		       (sn == 0 || (sn == 10 && memcmp(s, "annotation", 10) == 0) ||
			(sn == 6 && memcmp(s, "always", 6) == 0) || (sn == 3 && memcmp(s, "off", 3) == 0));
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
	if (IS("stateDir"))
		/* config.Parse wants it absolute when set. */
		return str(j, &s, &sn, &esc) && (sn == 0 || s[0] == '/');
	if (IS("userns"))
		return object(j, userns_member, NULL);
	return 0;
}

#undef IS

/* parse_config: config.Parse accepts raw; runtime is its "runtime" ("" when
 * unset), NUL-terminated in cap bytes. */
static int parse_config(const char *raw, size_t len, char *runtime, size_t cap)
{
	struct json j = {raw, raw + len};
	struct top t = {NULL, 0, 0};

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

/* join_runc is Go's filepath.Join(dir, "runc") for an absolute dir: the
 * lexical Clean, which is also the path Go stats and passes as argv[0]. */
static int join_runc(const char *dir, size_t n, char *out, size_t cap)
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
			e = "runc";
			len = 4;
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

		/* A relative entry: Go makes the path absolute with $PWD or
		 * getcwd; leave that to it. */
		if (n == 0 || path_env[0] != '/')
			return 0;
		if (!join_runc(path_env, n, runtime, cap))
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

int fp_decide(char *const *argv, char *const *envp, const struct fp_sys *sys, char *runtime, size_t cap)
{
	char raw[FP_CONFIG_MAX];
	char configured[FP_PATH_MAX];
	const char *v, *path;
	char *const *e;
	long len;

	if (!envp || !fast_argv(argv))
		return 0;
	/* Go's os.Environ drops empty entries; runc would get a different
	 * environment. */
	for (e = envp; *e; e++)
		if (!**e)
			return 0;
	v = fp_getenv(envp, "RUNC_USERNS_FASTPATH");
	if (v && strcmp(v, "0") == 0)
		return 0;

	/* config.Load */
	path = fp_getenv(envp, "RUNC_USERNS_CONFIG");
	if (!path || !*path)
		path = DEFAULT_CONFIG;
	len = sys->read_config(sys, path, raw, sizeof raw);
	if (len == FP_READ_ENOENT && strcmp(path, DEFAULT_CONFIG) == 0)
		configured[0] = '\0';
	else if (len < 0 || !parse_config(raw, (size_t)len, configured, sizeof configured))
		return 0;

	return find_runc(sys, configured, fp_getenv(envp, "PATH"), runtime, cap);
}

/* --- the real system and the constructor. */

static long real_read_config(const struct fp_sys *sys, const char *path, char *buf, size_t cap)
{
	struct stat st;
	size_t got = 0;
	ssize_t r;
	char extra;
	int fd;

	(void)sys;
	/* O_NONBLOCK: a FIFO must not hang us; Go opens it as before. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? FP_READ_ENOENT : FP_READ_FAIL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		goto fail;
	while (got < cap) {
		r = read(fd, buf + got, cap - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto fail;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	if (got == cap) {
		do
			r = read(fd, &extra, 1);
		while (r < 0 && errno == EINTR);
		if (r != 0)
			goto fail; /* too long, or an error */
	}
	close(fd);
	return (long)got;
fail:
	close(fd);
	return FP_READ_FAIL;
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
	return 0;
}

/*
 * glibc calls constructors with argc, argv and envp, before main and so
 * before the Go runtime. runc.Exec's argv: the runtime's path, then ours
 * from argv[1] on; our environment as is.
 */
__attribute__((constructor)) static void fastpath(int argc, char **argv, char **envp)
{
	static const struct fp_sys sys = {real_read_config, real_stat, NULL};
	char runtime[FP_PATH_MAX];
	char **args;
	int saved = errno;

	if (argc < 1 || !fp_decide(argv, envp, &sys, runtime, sizeof runtime))
		goto out;
	args = malloc(sizeof(char *) * ((size_t)argc + 1));
	if (!args)
		goto out;
	memcpy(args, argv, sizeof(char *) * ((size_t)argc + 1));
	args[0] = runtime;
	execve(runtime, args, envp);
	/* The Go code tries the same exec and reports why it failed. */
	free(args);
out:
	/*
	 * The Go code handles the call. Its threads come from pthread_create
	 * and barely use malloc (cgo's thread start-up does): one arena for
	 * all of them, not one 64 MiB arena per thread, each with its first
	 * pages to fault in (~0.3 ms a call measured on the nested VM).
	 */
	mallopt(M_ARENA_MAX, 1);
	errno = saved;
}
