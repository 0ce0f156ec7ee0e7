package main

// The pass-through fast path lives in fastpath_linux.c: a C constructor
// that, before the Go runtime starts, execs the real runc for start, state,
// kill, list, ps, events, pause, resume and update when the Go code would
// do exactly that (same config verdict, same runc, argv untouched), and
// otherwise returns and lets main run. The Go runtime's start-up alone
// costs several milliseconds on a nested VM; those commands run for every
// container. RUNC_USERNS_FASTPATH=0 in the environment turns it off.
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
	const struct fp_fake_file *files;
	int nfiles;
};

static long fp_fake_read(const struct fp_sys *sys, const char *path, char *buf, size_t cap)
{
	const struct fp_fake *f = sys->data;

	if (!f->config_path || strcmp(path, f->config_path) != 0)
		return FP_READ_ENOENT;
	if (f->config_len < 0)
		return f->config_len;
	if ((size_t)f->config_len > cap)
		return FP_READ_FAIL;
	memcpy(buf, f->config, (size_t)f->config_len);
	return f->config_len;
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

static int fp_decide_fake(char **argv, char **envp, struct fp_fake *fake, char *runtime, size_t cap)
{
	struct fp_sys sys = {fp_fake_read, fp_fake_stat, fake};

	return fp_decide(argv, envp, &sys, runtime, cap);
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
// configPath (unreadable when configUnreadable; every other path does not
// exist) and the files stat finds, /proc/self/exe among them.
type fastpathSys struct {
	configPath       string
	config           []byte
	configUnreadable bool
	files            []fastpathFile
}

// fastpathDecide runs the constructor's decision: the runtime it would
// exec argv with, and whether it would.
func fastpathDecide(argv, env []string, sys fastpathSys) (string, bool) {
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
	if n := len(sys.files); n > 0 {
		files := (*[1 << 20]C.struct_fp_fake_file)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.struct_fp_fake_file{}))))
		frees = append(frees, unsafe.Pointer(files))
		for i, f := range sys.files {
			files[i] = C.struct_fp_fake_file{path: cstr(f.path), dev: C.ulonglong(f.dev), ino: C.ulonglong(f.ino), mode: C.uint(f.mode)}
		}
		fake.files, fake.nfiles = &files[0], C.int(n)
	}

	runtime := (*C.char)(C.malloc(C.FP_PATH_MAX))
	frees = append(frees, unsafe.Pointer(runtime))
	if C.fp_decide_fake(cvec(argv), cvec(env), fake, runtime, C.FP_PATH_MAX) == 0 {
		return "", false
	}
	return C.GoString(runtime), true
}
