package main

// The pass-through fast path lives in fastpath_linux.c: a C constructor
// that, before the Go runtime starts, execs the real runc when the Go code
// would do exactly that (same config verdict, same runc, argv untouched),
// and otherwise returns and lets main run: for start, state, kill, list,
// ps, events, pause, resume and update, and for a delete or exec whose
// flags oci.Parse scans completely, of a valid container ID whose runc
// state.json is whole and holds no oci.AnnotationStamp (a container the
// wrapper never edited: delete has nothing to release, exec no network
// namespace to enter), and for a create whose spec asks nothing of the
// wrapper (no annotation of ours, no user namespace, mapping or idmap
// request, no container:<ID> join, not an app container of a pod with a
// pinned pool user namespace). The Go runtime's start-up alone costs several
// milliseconds on a nested VM; those commands run for every container, and
// exec for every exec probe. A delete of a container the wrapper did edit,
// with a config file in effect, it starts runc for at once and returns: the
// Go code (early.go) waits for that runc and then releases what the
// container held. RUNC_USERNS_FASTPATH=0 in the environment turns both off.
//
// This file only lets the tests run the constructor's decision on bytes
// and fake files (cgo cannot be used in _test.go files).

/*
#cgo CFLAGS: -Wall -Wextra
#include <stdlib.h>
#include <string.h>
#include "fastpath.h"

struct fp_fake_file {
	const char *path;
	unsigned long long dev, ino;
	unsigned int mode;
};

struct fp_fake {
	const char *config_path;
	const char *config;
	long config_len; // or FP_READ_FAIL: the file is unreadable
	const char *state_path; // "*": every path read_state is asked for
	const char *state;
	long state_len; // or FP_READ_FAIL
	char *state_read; // FP_PATH_MAX bytes: the path read_state was asked for
	const char *spec_path;
	const char *spec;
	long spec_len; // or FP_READ_FAIL
	char *spec_read; // FP_PATH_MAX bytes: the path read_spec was asked for
	const struct fp_fake_file *files;
	int nfiles;
	const char *const *present; // lstat finds these (pins)
	int npresent;
};

static long fp_fake_file(const char *want, const char *data, long len, const char *path, char *buf, size_t cap)
{
	if (!want || (strcmp(want, "*") != 0 && strcmp(path, want) != 0))
		return FP_READ_ENOENT;
	if (len < 0)
		return len;
	if ((size_t)len > cap)
		return FP_READ_FAIL;
	memcpy(buf, data, (size_t)len);
	return len;
}

static long fp_fake_read(const struct fp_sys *sys, const char *path, char *buf, size_t cap)
{
	const struct fp_fake *f = sys->data;

	return fp_fake_file(f->config_path, f->config, f->config_len, path, buf, cap);
}

static long fp_fake_read_state(const struct fp_sys *sys, const char *path, char *buf, size_t cap)
{
	const struct fp_fake *f = sys->data;

	strncpy(f->state_read, path, FP_PATH_MAX - 1);
	return fp_fake_file(f->state_path, f->state, f->state_len, path, buf, cap);
}

static long fp_fake_read_spec(const struct fp_sys *sys, const char *path, char *buf, size_t cap)
{
	const struct fp_fake *f = sys->data;
	strncpy(f->spec_read, path, FP_PATH_MAX - 1);
	return fp_fake_file(f->spec_path, f->spec, f->spec_len, path, buf, cap);
}

static int fp_fake_exists(const struct fp_sys *sys, const char *path)
{
	const struct fp_fake *f = sys->data;
	int i;
	for (i = 0; i < f->npresent; i++)
		if (strcmp(path, f->present[i]) == 0)
			return 1;
	return 0;
}

static int fp_fake_stat(const struct fp_sys *sys, const char *path, struct fp_stat *st)
{
	const struct fp_fake *f = sys->data;
	int i;

	for (i = 0; i < f->nfiles; i++) {
		if (strcmp(path, f->files[i].path) == 0) {
			st->dev = f->files[i].dev;
			st->ino = f->files[i].ino;
			st->mode = f->files[i].mode;
			return 0;
		}
	}
	return -1;
}

static const char *fp_stamp_key(void)
{
	return FP_STAMP_KEY;
}

static int fp_decide_fake(char **argv, char **envp, struct fp_fake *fake, char *runtime, size_t cap,
			  char **state, long *state_len)
{
	struct fp_sys sys = {fp_fake_read, fp_fake_stat, fp_fake_read_state, fp_fake_read_spec, fp_fake_exists, fake};

	return fp_decide(argv, envp, &sys, runtime, cap, state, state_len);
}
*/
import "C"

import "unsafe"

// fastpathFile is a file the fake stat(2) knows (it follows no symlinks:
// list the target's identity under the link's path).
type fastpathFile struct {
	path     string
	dev, ino uint64
	mode     uint32 // st_mode: type and permission bits
}

// fastpathSys is the machine a test's decision sees: the config file at
// configPath (unreadable when configUnreadable), runc's state file at
// statePath ("*": at any path; unreadable when stateUnreadable), every
// other path does not exist; and the files stat finds, /proc/self/exe
// among them.
type fastpathSys struct {
	configPath       string
	config           []byte
	configUnreadable bool
	statePath        string
	state            []byte
	stateUnreadable  bool
	specPath         string // a bundle's config.json
	spec             []byte
	files            []fastpathFile
	present          []string // paths lstat finds (pods' pins)
}

// fastpathStampKey is the stamp key the C side looks for in state.json.
var fastpathStampKey = C.GoString(C.fp_stamp_key())

// fp_read_file's answers besides a length.
const (
	fpReadENOENT = C.FP_READ_ENOENT
	fpReadFail   = C.FP_READ_FAIL
)

// fp_decide's verdicts.
const (
	verdictGo    = C.FP_GO
	verdictExec  = C.FP_EXEC
	verdictSpawn = C.FP_SPAWN
)

// fastpathVerdict is what the constructor decided.
type fastpathVerdict struct {
	kind      int    // verdictGo, verdictExec or verdictSpawn
	runtime   string // verdictExec, verdictSpawn: the runc it would exec or start
	stateRead string // the state.json path it tried to read ("" for none)
	state     []byte // verdictSpawn: the state.json bytes it keeps for the Go code
	specRead  string // the config.json path it tried to read ("" for none)
}

// fastpathDecide runs the constructor's decision on argv and env, with sys
// as the machine.
func fastpathDecide(argv, env []string, sys fastpathSys) (v fastpathVerdict) {
	var frees []unsafe.Pointer
	defer func() {
		for _, p := range frees {
			C.free(p)
		}
	}()
	cstr := func(s string) *C.char {
		p := C.CString(s)
		frees = append(frees, unsafe.Pointer(p))
		return p
	}
	// cvec: a NULL-terminated char*[] in C memory (cgo forbids passing Go
	// memory that holds Go pointers).
	cvec := func(ss []string) **C.char {
		size := C.size_t(unsafe.Sizeof((*C.char)(nil)))
		v := (*[1 << 20]*C.char)(C.malloc(size * C.size_t(len(ss)+1)))
		frees = append(frees, unsafe.Pointer(v))
		for i, s := range ss {
			v[i] = cstr(s)
		}
		v[len(ss)] = nil
		return &v[0]
	}

	fake := (*C.struct_fp_fake)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_fp_fake{}))))
	frees = append(frees, unsafe.Pointer(fake))
	if sys.configPath != "" {
		fake.config_path = cstr(sys.configPath)
		fake.config = cstr(string(sys.config))
		fake.config_len = C.long(len(sys.config))
		if sys.configUnreadable {
			fake.config_len = C.FP_READ_FAIL
		}
	}
	if sys.statePath != "" {
		fake.state_path = cstr(sys.statePath)
		fake.state = (*C.char)(C.CBytes(sys.state))
		frees = append(frees, unsafe.Pointer(fake.state))
		fake.state_len = C.long(len(sys.state))
		if sys.stateUnreadable {
			fake.state_len = C.FP_READ_FAIL
		}
	}
	fake.state_read = (*C.char)(C.calloc(1, C.FP_PATH_MAX))
	frees = append(frees, unsafe.Pointer(fake.state_read))
	if sys.specPath != "" {
		fake.spec_path = cstr(sys.specPath)
		fake.spec = (*C.char)(C.CBytes(sys.spec))
		frees = append(frees, unsafe.Pointer(fake.spec))
		fake.spec_len = C.long(len(sys.spec))
	}
	fake.spec_read = (*C.char)(C.calloc(1, C.FP_PATH_MAX))
	frees = append(frees, unsafe.Pointer(fake.spec_read))
	if n := len(sys.present); n > 0 {
		fake.present, fake.npresent = (**C.char)(unsafe.Pointer(cvec(sys.present))), C.int(n)
	}
	if n := len(sys.files); n > 0 {
		files := (*[1 << 20]C.struct_fp_fake_file)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.struct_fp_fake_file{}))))
		frees = append(frees, unsafe.Pointer(files))
		for i, f := range sys.files {
			files[i] = C.struct_fp_fake_file{path: cstr(f.path), dev: C.ulonglong(f.dev), ino: C.ulonglong(f.ino), mode: C.uint(f.mode)}
		}
		fake.files, fake.nfiles = &files[0], C.int(n)
	}

	rt := (*C.char)(C.malloc(C.FP_PATH_MAX))
	frees = append(frees, unsafe.Pointer(rt))
	var state *C.char
	var stateLen C.long
	v.kind = int(C.fp_decide_fake(cvec(argv), cvec(env), fake, rt, C.FP_PATH_MAX, &state, &stateLen))
	if v.kind != verdictGo {
		v.runtime = C.GoString(rt)
	}
	if state != nil {
		v.state = C.GoBytes(unsafe.Pointer(state), C.int(stateLen))
		C.free(unsafe.Pointer(state))
	}
	v.stateRead = C.GoString(fake.state_read)
	v.specRead = C.GoString(fake.spec_read)
	return v
}

// fastpathReadFile runs the constructor's real reader: the file's bytes (at
// most max) and their count, or fpReadENOENT or fpReadFail.
func fastpathReadFile(path string, max int) ([]byte, int) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	buf := C.malloc(C.size_t(max + 1))
	defer C.free(buf)
	n := C.fp_read_file(nil, cpath, (*C.char)(buf), C.size_t(max))
	if n < 0 {
		return nil, int(n)
	}
	return C.GoBytes(buf, C.int(n)), int(n)
}
