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
 *     before: the heap, 4 MiB at a time from a random page of its first
 *     chunk on (go1.26's heap base randomisation), and the page
 *     allocator's summaries;
 *   - small maps of its own (at most 256 KiB) are persistentalloc's chunks
 *     (span structures, span-set blocks) and the like, filled from the
 *     start.
 *
 * Larger maps (the 32 MiB page-allocator index, the 1 MiB arena
 * metadata, the 1.4 MiB profiling hash) are sparse tables; thread stacks
 * (MAP_STACK) are touched at their top only. Those stay to be faulted in.
 *
 * Heap chunks go further: when the buddy allocator has free huge-page
 * blocks to spare (/proc/buddyinfo), a chunk is advised MADV_HUGEPAGE
 * before it is populated, and comes in as two 2 MiB pages. Populating 4 MiB
 * as 1024 small pages cost ~0.8 ms and the first touch of each ~2.5-5 us
 * more (the hypervisor fills its shadow page table page by page); two huge
 * pages cost ~0.25 ms and no touch costs anything (bench/README,
 * fourteenth round). The free blocks are checked first because the kernel
 * serves a huge-page fault in an advised range with direct compaction and
 * reclaim when it has none (transparent_hugepage/defrag "madvise", the
 * default): a stall of milliseconds on a fragmented node, where small pages
 * cost what they did before. With transparent huge pages off ("never") the
 * advice does nothing and the chunk is populated with small pages.
 *
 * Only a hint: MAP_POPULATE never changes what a page holds (a populated
 * anonymous page reads as zero, as a faulted-in one does), and the kernel
 * ignores a failure to populate. The runtime counts this memory as
 * released whether or not it is resident, so its scavenger leaves it
 * alone. The cost is resident memory: each heap chunk whole (4 MiB; a
 * create commits one or two) and a few small maps, for a process that
 * lives tens of milliseconds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

/* Linux 5.14's; musl's headers may not have them yet. */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* The largest map populated: MAP_FIXED (the heap's growth unit,
 * pallocChunkBytes), and any other (persistentChunkSize). */
#define POPULATE_FIXED_MAX (4UL << 20)
#define POPULATE_MAX (256UL << 10)

/* Free blocks of huge-page size that /proc/buddyinfo must list before a
 * heap chunk (two of them) is advised: room for the chunk and for whatever
 * else allocates at the same time, so that the fault finds its blocks on
 * the free lists. */
#define HUGE_ROOM_MIN 16

int populates(size_t len, int prot, int flags);
int huge_candidate(unsigned long addr, size_t len, int flags);
unsigned long huge_room(const char *text, size_t n, int order);
int huge_ok(void);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);

/* populates: whether a map of len bytes with prot and flags is one to
 * populate (see above). */
int populates(size_t len, int prot, int flags)
{
	size_t max = (flags & MAP_FIXED) ? POPULATE_FIXED_MAX : POPULATE_MAX;

	return prot == (PROT_READ | PROT_WRITE) &&
	       (flags & (MAP_ANONYMOUS | MAP_PRIVATE | MAP_SHARED | MAP_STACK)) == (MAP_ANONYMOUS | MAP_PRIVATE) &&
	       len <= max;
}

/* The size a huge (PMD) page maps: a page-table page of 8-byte entries
 * maps page/8 pages, so 2 MiB with 4 KiB pages. */
static size_t huge_size(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return page * (page / 8);
}

/* huge_candidate: whether a map to populate (populates) is a heap chunk to
 * advise: MAP_FIXED and made of whole, aligned huge pages. */
int huge_candidate(unsigned long addr, size_t len, int flags)
{
	size_t huge = huge_size();

	return (flags & MAP_FIXED) && len >= huge && len % huge == 0 && addr % huge == 0;
}

/*
 * huge_room counts the free blocks of at least `order` in the text of
 * /proc/buddyinfo ("Node 0, zone   Normal   2408 2588 ...": free blocks of
 * order 0, 1, 2, ... per zone), in blocks of that order. DMA is left out:
 * its lowmem reserve keeps user memory from it. The count saturates; text
 * that is not buddyinfo's counts what parses as it.
 */
unsigned long huge_room(const char *text, size_t n, int order)
{
	const char *p = text, *end = text + n;
	unsigned long room = 0;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *q;
		int column = 0, skip = 0;

		if (!eol)
			eol = end;
		/* The zone's name follows "zone"; the counts follow the name. */
		q = memmem(p, (size_t)(eol - p), " zone ", 6);
		if (!q) {
			p = eol + 1;
			continue;
		}
		q += 6;
		while (q < eol && *q == ' ')
			q++;
		if (eol - q >= 4 && memcmp(q, "DMA ", 4) == 0)
			skip = 1;
		while (q < eol && *q != ' ')
			q++;
		while (q < eol && !skip) {
			unsigned long count = 0;
			int digits = 0;

			while (q < eol && *q == ' ')
				q++;
			while (q < eol && *q >= '0' && *q <= '9') {
				if (count < (1UL << 40))
					count = count * 10 + (unsigned long)(*q - '0');
				q++;
				digits = 1;
			}
			if (!digits)
				break;
			if (column >= order && column - order < 20) {
				unsigned long blocks = count << (column - order);

				room = room > ~0UL - blocks ? ~0UL : room + blocks;
			}
			column++;
		}
		p = eol + 1;
	}
	return room;
}

/* huge_ok: whether the buddy allocator has HUGE_ROOM_MIN free huge-page
 * blocks now. Any failure to tell is a no. */
int huge_ok(void)
{
	char buf[8192];
	size_t n = 0, page = (size_t)sysconf(_SC_PAGESIZE), blocks = page / 8;
	int fd = open("/proc/buddyinfo", O_RDONLY | O_CLOEXEC), order = 0;
	ssize_t r;

	if (fd < 0)
		return 0;
	while (n < sizeof(buf) && (r = read(fd, buf + n, sizeof(buf) - n)) > 0)
		n += (size_t)r;
	close(fd);
	while (blocks > 1) {
		blocks >>= 1;
		order++;
	}
	return huge_room(buf, n, order) >= HUGE_ROOM_MIN;
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *p;
	int saved;

	if (!populates(len, prot, flags))
		return __real_mmap(addr, len, prot, flags, fd, off);
	saved = errno;
	if (!huge_candidate((unsigned long)addr, len, flags) || !huge_ok()) {
		errno = saved;
		return __real_mmap(addr, len, prot, flags | MAP_POPULATE, fd, off);
	}
	p = __real_mmap(addr, len, prot, flags, fd, off);
	if (p == MAP_FAILED)
		return p;
	/* Without transparent huge pages the advice fails or does nothing,
	 * and small pages are populated. Before Linux 5.14 (no
	 * MADV_POPULATE_WRITE) the advised chunk is faulted in as used, a huge
	 * page at a time. */
	madvise(p, len, MADV_HUGEPAGE);
	madvise(p, len, MADV_POPULATE_WRITE);
	errno = saved;
	return p;
}
