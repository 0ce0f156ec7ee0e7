/*
 * The Go runtime's memory, mapped into the page tables when it is mapped.
 *
 * In a cgo binary the Go runtime maps memory through the C library's mmap
 * (runtime/cgo's x_cgo_mmap). The link wraps that symbol
 * (populate_linux.go: -Wl,--wrap=mmap): every call made by name from this
 * binary's C objects, runtime/cgo's included, comes here first. The C
 * library's own calls (malloc, thread stacks) use its internal alias and do
 * not.
 *
 * A create took ~280 page faults, ~195 of them on the runtime's fresh
 * memory, one a page: ~0.25 us each on bare metal, 20-35 us on the VM
 * measured (a trap through the hypervisor each), where MAP_POPULATE maps
 * a page for ~0.8 us and its first touch then costs 2.5-5 us
 * (bench/README, thirteenth round). The runtime starts using what it maps
 * at once and from the start:
 *
 *   - MAP_FIXED read-write maps commit address space the runtime reserved
 *     before: the heap, 4 MiB at a time, and the page allocator's
 *     summaries;
 *   - small maps of its own (at most 256 KiB) are persistentalloc's chunks
 *     (span structures, span-set blocks) and the like, filled from the
 *     start.
 *
 * Larger maps (the 32 MiB page-allocator index, the 1 MiB arena
 * metadata, the 1.4 MiB profiling hash) are sparse tables; thread stacks
 * (MAP_STACK) are touched at their top only. Those stay to be faulted in.
 *
 * Not huge pages. Advising a heap chunk MADV_HUGEPAGE and populating it
 * costs ~0.25 ms back to back, against ~1.8 ms for small pages; but after
 * a few idle seconds it cost 8-10 ms in four runs of six on the VM measured,
 * whose kernel reports free high-order blocks to the hypervisor (free page
 * reporting): a huge page then comes from memory the host must back again,
 * page by page, while small pages come from recently freed, still backed
 * ones (bench/README, fourteenth round).
 *
 * Only where a fault is dear. The figures above are one VM's. On another
 * of this project's machines (2026-11-27) a fault on a fresh anonymous
 * page cost 1.4 us and populating one 1.2 us: mapping in every page paid
 * for the pages the process never touches, and a pooled create ran 1.5 ms
 * slower with it than without (bench/README, twenty-second round). So the
 * constructor times three faults on fresh pages first (fault_cost_ns:
 * ~5 us of its time there, ~50 us where faults are dear) and populates
 * only where the cheapest cost POPULATE_FAULT_NS or more
 * (populate_wanted); RUNC_USERNS_POPULATE=1 or 0 in the environment
 * decides instead (the tests, and an operator comparing both).
 *
 * Only a hint: MAP_POPULATE never changes what a page holds (a populated
 * anonymous page reads as zero, as a faulted-in one does), and the kernel
 * ignores a failure to populate. The runtime counts this memory as
 * released whether or not it is resident, so its scavenger leaves it
 * alone. The cost is resident memory: the heap's head (below) and a few
 * small maps, for a process that lives tens of milliseconds.
 *
 * The heap's head. go1.26 randomises where the heap starts: it marks a
 * random number of pages at the start of the first chunk as allocated,
 * padding never touched, so that only the whole chunk was sure to hold
 * what the runtime would use. Zeroing and mapping 4 MiB for the ~210
 * pages a create touches (~1.3 ms here), and unmapping them at exit, was
 * the largest single cost of a create's start-up in a profile. The
 * Makefile builds with GOEXPERIMENT=norandomizedheapbase64 (the heap from
 * its first chunk's start, as before go1.26): populate_heapbase_linux.go
 * then defines POPULATE_HEAP_HEAD and a 4 MiB MAP_FIXED map gets its first
 * 2 MiB mapped in. A pooled create touches its first 1.25-1.5 MiB
 * (`perf record -e page-faults -d`, four creates); what lies beyond is
 * faulted in as before. Randomising the heap's base is a hardening for
 * memory-unsafe code in the process; here that code (the constructor's)
 * runs before the Go heap exists, and the binary's text, not built as
 * PIE, sits at a fixed address anyway.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* The largest map populated: MAP_FIXED (the heap's growth unit,
 * pallocChunkBytes), and any other (persistentChunkSize). */
#define POPULATE_FIXED_MAX (4UL << 20)
#define POPULATE_MAX (256UL << 10)
/* How much of a heap chunk (a MAP_FIXED map of POPULATE_FIXED_MAX) is
 * mapped in: its head when the heap grows from the chunk's start. */
#ifdef POPULATE_HEAP_HEAD
#define POPULATE_CHUNK_HEAD (2UL << 20)
#else
#define POPULATE_CHUNK_HEAD POPULATE_FIXED_MAX
#endif

/* A page fault at least this dear (ns) makes mapping in ahead pay: 14-22
 * us on the VM the figures above come from, 1.4 us on the later one,
 * ~0.25 us on bare metal. */
#define POPULATE_FAULT_NS 5000

/* populate: whether maps are mapped in as they are made; the constructor
 * sets it (populate_decide) before the Go runtime maps anything. */
int populate = 1;
/* populate_fault_ns: the fault's cost populate_decide measured (-1: none). */
long populate_fault_ns = -1;

size_t populate_len(size_t len, int prot, int flags);
int populate_wanted(const char *env, long fault_ns);
long fault_cost_ns(void);
void populate_decide(const char *env);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);

/* populate_len: how many bytes from its start of a map of len bytes with
 * prot and flags to map in (see above); 0: none. */
size_t populate_len(size_t len, int prot, int flags)
{
	size_t max = (flags & MAP_FIXED) ? POPULATE_FIXED_MAX : POPULATE_MAX;

	if (prot != (PROT_READ | PROT_WRITE) ||
	    (flags & (MAP_ANONYMOUS | MAP_PRIVATE | MAP_SHARED | MAP_STACK)) != (MAP_ANONYMOUS | MAP_PRIVATE) || len > max)
		return 0;
	if ((flags & MAP_FIXED) && len == POPULATE_FIXED_MAX)
		return POPULATE_CHUNK_HEAD;
	return len;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* populate_env: what RUNC_USERNS_POPULATE's value (NULL: unset) decides:
 * 1 or 0, or -1 when it leaves it to a fault's cost. */
static int populate_env(const char *env)
{
	if (env && strcmp(env, "1") == 0)
		return 1;
	if (env && strcmp(env, "0") == 0)
		return 0;
	return -1;
}

/* populate_wanted: whether to map in, from RUNC_USERNS_POPULATE's value
 * (NULL: unset) and the cost of a page fault in ns (< 0: not measured). */
int populate_wanted(const char *env, long fault_ns)
{
	int decided = populate_env(env);

	if (decided >= 0)
		return decided;
	return fault_ns < 0 || fault_ns >= POPULATE_FAULT_NS;
}

static long elapsed_ns(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1000000000L + (b->tv_nsec - a->tv_nsec);
}

/* fault_cost_ns: the cheapest of three first writes to fresh anonymous
 * pages (the first page's write, which also allocates the page table, is
 * not timed); -1 if it cannot tell. The cheapest, so that an interrupt
 * during one of them does not count. Small pages: a transparent huge page
 * (or a multi-size one, where enabled) would map the others with the
 * first and time no fault at all. */
long fault_cost_ns(void)
{
	long page = sysconf(_SC_PAGESIZE), best = LONG_MAX;
	struct timespec a, b;
	char *p;
	int i;

	if (page <= 0)
		return -1;
	p = __real_mmap(NULL, 4 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	/* EINVAL without THP in the kernel: then there is none to avoid. */
	madvise(p, 4 * (size_t)page, MADV_NOHUGEPAGE);
	*(volatile char *)p = 1;
	for (i = 1; i < 4; i++) {
		if (clock_gettime(CLOCK_MONOTONIC, &a) != 0)
			break;
		*(volatile char *)(p + i * page) = 1;
		if (clock_gettime(CLOCK_MONOTONIC, &b) != 0)
			break;
		if (elapsed_ns(&a, &b) < best)
			best = elapsed_ns(&a, &b);
	}
	munmap(p, 4 * (size_t)page);
	return best == LONG_MAX ? -1 : best;
}

/* populate_decide sets populate for this process, from
 * RUNC_USERNS_POPULATE's value env (NULL: unset), measuring a fault only
 * when env does not decide. */
void populate_decide(const char *env)
{
	populate_fault_ns = populate_env(env) < 0 ? fault_cost_ns() : -1;
	populate = populate_wanted(env, populate_fault_ns);
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	size_t n = populate ? populate_len(len, prot, flags) : 0;
	void *p;

	if (n == len)
		return __real_mmap(addr, len, prot, flags | MAP_POPULATE, fd, off);
	p = __real_mmap(addr, len, prot, flags, fd, off);
	/* Its head only: a hint as MAP_POPULATE is (an older kernel's
	 * EINVAL leaves the pages to be faulted in). */
	if (n && p != MAP_FAILED) {
		int saved = errno;

		madvise(p, n, MADV_POPULATE_WRITE);
		errno = saved;
	}
	return p;
}
