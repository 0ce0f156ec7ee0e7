package main

// The pass-through fast path lives in fastpath_linux.c: a C constructor
// that, before the Go runtime starts, execs the real runc when the Go code
// would do exactly that (same config verdict, same runc, argv untouched),
// and otherwise returns and lets main run: for start, state, kill, list,
// ps, events, pause, resume and update, and for a delete or exec whose
// flags oci.Parse scans completely, of a valid container ID whose runc
// state.json is whole and holds no oci.AnnotationStamp (a container the
// wrapper never edited: delete has nothing to release, exec no network
// namespace to enter), for a delete of an ID runc no longer has when
// nothing of ours is left for it (no in-flight marker, no container
// directory: containerd's second delete of every container), and for a
// create whose spec asks nothing of the
// wrapper (no annotation of ours, no user namespace, mapping or idmap
// request, no container:<ID> join, not an app container of a pod with a
// pinned pool user namespace). The Go runtime's start-up alone costs several
// milliseconds on a nested VM; those commands run for every container, and
// exec for every exec probe. A delete of a container the wrapper did edit,
// with a config file in effect, it starts runc for at once; then, in the
// usual case (see fp_release), it waits for runc and releases what the
// container held itself, without the Go runtime; otherwise it returns and
// the Go code (early.go) waits for that runc and then releases. A create
// the Go code acts on (a pool user namespace, say), with a config file and
// one --log, for runc itself, it starts runc for at once, behind a gate on
// runc's --log that the Go code opens once the edited spec is written
// (early.go's gatedRunc); for a spec that joins a network namespace by
// path, only once the Go code has cached runc's features (a runc < 1.3
// starts inside that namespace, as netjoin.go starts it).
// RUNC_USERNS_FASTPATH=0 in the environment turns all of it off.
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
	long long size, mtime_ns;
};

// One file fp_decide may read.
struct fp_fake_read {
	const char *path; // "*": every path asked for
	const char *data;
	long len; // or FP_READ_FAIL: the file is unreadable
	char *asked; // FP_PATH_MAX bytes: the path fp_decide asked for
};

struct fp_fake {
	struct fp_fake_read reads[FP_NFILES]; // by enum fp_file
	const struct fp_fake_file *files;
	int nfiles;
	const char *const *present; // lstat finds these (pins)
	int npresent;
};

static long fp_fake_read(const struct fp_sys *sys, int which, const char *path, char *buf, size_t cap)
{
	const struct fp_fake_read *r = &((const struct fp_fake *)sys->data)->reads[which];

	strncpy(r->asked, path, FP_PATH_MAX - 1);
	if (!r->path || (strcmp(r->path, "*") != 0 && strcmp(path, r->path) != 0))
		return FP_READ_ENOENT;
	if (r->len < 0)
		return r->len;
	if ((size_t)r->len > cap)
		return FP_READ_FAIL;
	memcpy(buf, r->data, (size_t)r->len);
	return r->len;
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
			st->size = f->files[i].size;
			st->mtime_ns = f->files[i].mtime_ns;
			return 0;
		}
	}
	return -1;
}

static const char *fp_stamp_key(void)
{
	return FP_STAMP_KEY;
}

static const char *fp_netjoin_marker(void)
{
	return FP_NETJOIN_MARKER;
}

static int fp_decide_fake(char **argv, char **envp, struct fp_fake *fake, char *runtime, size_t cap,
			  char **state, long *state_len, struct fp_plan *plan)
{
	struct fp_sys sys = {fp_fake_read, fp_fake_stat, fp_fake_exists, fake};

	return fp_decide(argv, envp, &sys, runtime, cap, state, state_len, plan);
}

// fp_initial_argv_fake lays out a start-up stack from words (a word >= 0 as
// is: argc, a NULL; -k a pointer to a string of its own, k from 1) and runs
// fp_initial_argv on it with envp at index envp and argv[0] the pointer
// -progname stands for. The found argv as an index into words, or -1.
static int fp_initial_argv_fake(const long *words, int n, int envp, int progname, int *argc)
{
	static char strings[64][2];
	long stack[64];
	char **argv = NULL;
	int i;

	if (n > 64)
		return -2;
	for (i = 0; i < n; i++)
		stack[i] = words[i] >= 0 ? words[i] : (long)strings[-words[i] % 64];
	if (fp_initial_argv((char **)&stack[envp], strings[progname % 64], argc, &argv) != 0)
		return -1;
	return (int)(argv - (char **)stack);
}
*/
import "C"

import "unsafe"

// fastpathFile is a file the fake stat(2) knows (it follows no symlinks:
// list the target's identity under the link's path).
type fastpathFile struct {
	path          string
	dev, ino      uint64
	mode          uint32 // st_mode: type and permission bits
	size, mtimeNs int64
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
	featuresPath     string // the runtime's features the Go code cached
	features         []byte
	files            []fastpathFile
	present          []string // paths lstat finds (pods' pins)
}

// fastpathStampKey is the stamp key the C side looks for in state.json.
var fastpathStampKey = C.GoString(C.fp_stamp_key())

// fastpathNetjoinMarker is the stamp's netjoin mark the C side looks for
// in a spec.
var fastpathNetjoinMarker = C.GoString(C.fp_netjoin_marker())

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
	verdictGate  = C.FP_GATE
)

// fastpathVerdict is what the constructor decided.
type fastpathVerdict struct {
	kind      int    // verdictGo, verdictExec or verdictSpawn
	runtime   string // verdictExec, verdictSpawn: the runc it would exec or start
	stateRead string // the state.json path it tried to read ("" for none)
	state     []byte // verdictSpawn: the state.json bytes it keeps for the Go code
	specRead  string // the config.json path it tried to read ("" for none)
	// verdictSpawn: whether the constructor would release by itself
	// (fp_release), and in which state dir, for which root and ID.
	release               bool
	relState, relRoot, id string
	// verdictGate: the state dir and root of the marker it would lock
	// (and id), and where --log's value is in argv (after "=" if logEq).
	gateState, gateRoot string
	logAt               int
	logEq               bool
	netns               string // the network namespace runc starts in ("": ours)
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
	asked := make([]*C.char, C.FP_NFILES)
	for which, f := range []struct {
		path       string
		data       []byte
		unreadable bool
	}{
		C.FP_FILE_CONFIG:   {sys.configPath, sys.config, sys.configUnreadable},
		C.FP_FILE_STATE:    {sys.statePath, sys.state, sys.stateUnreadable},
		C.FP_FILE_SPEC:     {sys.specPath, sys.spec, false},
		C.FP_FILE_FEATURES: {sys.featuresPath, sys.features, false},
	} {
		r := &fake.reads[which]
		r.asked = (*C.char)(C.calloc(1, C.FP_PATH_MAX))
		frees = append(frees, unsafe.Pointer(r.asked))
		asked[which] = r.asked
		if f.path == "" {
			continue
		}
		r.path = cstr(f.path)
		r.data = (*C.char)(C.CBytes(f.data))
		frees = append(frees, unsafe.Pointer(r.data))
		r.len = C.long(len(f.data))
		if f.unreadable {
			r.len = C.FP_READ_FAIL
		}
	}
	if n := len(sys.present); n > 0 {
		fake.present, fake.npresent = (**C.char)(unsafe.Pointer(cvec(sys.present))), C.int(n)
	}
	if n := len(sys.files); n > 0 {
		files := (*[1 << 20]C.struct_fp_fake_file)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.struct_fp_fake_file{}))))
		frees = append(frees, unsafe.Pointer(files))
		for i, f := range sys.files {
			files[i] = C.struct_fp_fake_file{path: cstr(f.path), dev: C.ulonglong(f.dev), ino: C.ulonglong(f.ino), mode: C.uint(f.mode),
				size: C.longlong(f.size), mtime_ns: C.longlong(f.mtimeNs)}
		}
		fake.files, fake.nfiles = &files[0], C.int(n)
	}

	rt := (*C.char)(C.malloc(C.FP_PATH_MAX))
	frees = append(frees, unsafe.Pointer(rt))
	var state *C.char
	var stateLen C.long
	plan := (*C.struct_fp_plan)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_fp_plan{}))))
	frees = append(frees, unsafe.Pointer(plan))
	v.kind = int(C.fp_decide_fake(cvec(argv), cvec(env), fake, rt, C.FP_PATH_MAX, &state, &stateLen, plan))
	if plan.release != 0 {
		v.release = true
		v.relState, v.relRoot, v.id = C.GoString(&plan.state_dir[0]), C.GoString(&plan.root[0]), C.GoString(&plan.id[0])
	}
	if v.kind == verdictGate {
		v.gateState, v.gateRoot, v.id = C.GoString(&plan.state_dir[0]), C.GoString(&plan.root[0]), C.GoString(&plan.id[0])
		v.logAt, v.logEq = int(plan.log_at), plan.log_eq != 0
		v.netns = C.GoString(&plan.netns[0])
	}
	if v.kind != verdictGo {
		v.runtime = C.GoString(rt)
	}
	if state != nil {
		v.state = C.GoBytes(unsafe.Pointer(state), C.int(stateLen))
		C.free(unsafe.Pointer(state))
	}
	v.stateRead = C.GoString(asked[C.FP_FILE_STATE])
	v.specRead = C.GoString(asked[C.FP_FILE_SPEC])
	return v
}

// fastpathShortSignals are the signals the C side forwards to an early
// runc while it waits for it.
func fastpathShortSignals() []int {
	var list *C.int
	n := int(C.fp_short_signals(&list))
	out := make([]int, n)
	for i, s := range unsafe.Slice(list, n) {
		out[i] = int(s)
	}
	return out
}

// fastpathRootHash is the C side's rootHash of root.
func fastpathRootHash(root string) string {
	c := C.CBytes([]byte(root))
	defer C.free(c)
	var out [13]C.char
	C.fp_root_hash((*C.char)(c), C.size_t(len(root)), &out[0])
	return C.GoString(&out[0])
}

// fastpathClaim is what the C side read of an in-flight marker's claim, or
// of a pool record (Allocated aside; Members: how many, and the first).
type fastpathClaim struct {
	Owner        string
	HostID, Size uint32
	Root, Member string
	Members      int
	ok           bool
}

// fastpathParseClaim runs fp_parse_claim, or fp_parse_record with record.
func fastpathParseClaim(data []byte, record bool) fastpathClaim {
	c := C.CBytes(data)
	defer C.free(c)
	r := (*C.struct_fp_record)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_fp_record{}))))
	defer C.free(unsafe.Pointer(r))
	var out fastpathClaim
	if record {
		out.ok = C.fp_parse_record((*C.char)(c), C.size_t(len(data)), r) == 1
		out.Members = int(r.nmembers)
		out.Member = C.GoString(&r.member[0])
	} else {
		out.ok = C.fp_parse_claim((*C.char)(c), C.size_t(len(data)), &r.head) == 1
		out.Member = C.GoString(&r.head.member[0])
	}
	out.Owner = C.GoString(&r.head.owner[0])
	out.HostID, out.Size = uint32(r.head.host_id), uint32(r.head.size)
	out.Root = C.GoString(&r.head.root[0])
	return out
}

// fastpathRelease runs the constructor's release (fp_release).
func fastpathRelease(stateDir, root, id string) bool {
	cs, cr, ci := C.CString(stateDir), C.CString(root), C.CString(id)
	defer C.free(unsafe.Pointer(cs))
	defer C.free(unsafe.Pointer(cr))
	defer C.free(unsafe.Pointer(ci))
	return C.fp_release(cs, cr, ci) == 1
}

// fastpathReadFile runs the constructor's real reader: the file's bytes (at
// most max) and their count, or fpReadENOENT or fpReadFail.
func fastpathReadFile(path string, max int) ([]byte, int) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	buf := C.malloc(C.size_t(max + 1))
	defer C.free(buf)
	n := C.fp_read_file(nil, C.FP_FILE_CONFIG, cpath, (*C.char)(buf), C.size_t(max))
	if n < 0 {
		return nil, int(n)
	}
	return C.GoBytes(buf, C.int(n)), int(n)
}

// fastpathInitialArgv runs fp_initial_argv on a start-up stack laid out
// from words (fp_initial_argv_fake): argc and argv's index in words, or
// ok false.
func fastpathInitialArgv(words []int64, envp, progname int) (argc, argv int, ok bool) {
	cw := make([]C.long, len(words))
	for i, w := range words {
		cw[i] = C.long(w)
	}
	var n C.int
	at := C.fp_initial_argv_fake(&cw[0], C.int(len(cw)), C.int(envp), C.int(progname), &n)
	if at < 0 {
		return 0, 0, false
	}
	return int(n), int(at), true
}
