/* SPDX-License-Identifier: MIT */
/*
 * Against the real kernel, on every path (auto/vectored, forced vectored,
 * forced loop): exactly the enqueued pages are purged, canaries around them
 * keep their bytes, bad ranges are reported and never stop the others.
 * PURGE_HUGE on transparent huge pages: test_kernel_thp.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "common.h"
#include "internal.h"
#include "mem.h"
#include "pagemap.h"

static struct failures fails;

static bool vectored_here(void)
{
	return purge_backend(MADV_DONTNEED) == PURGE_BACKEND_VECTORED;
}

static purge_queue *mkq(int mode, int advice, unsigned flags)
{
	struct purge_config cfg = {.mode = mode,
	                           .advice = advice,
	                           .flags = flags,
	                           .on_failure = record_failure,
	                           .arg = &fails};
	purge_queue *q;

	fails.n = 0;
	if (mode == PURGE_MODE_VECTORED && !vectored_here())
		cr_skip_test("process_madvise(PIDFD_SELF) not usable here (needs Linux 6.15+, "
		             "no seccomp filter)");
	cr_assert_eq(purge_queue_create(&q, &cfg), 0);
	return q;
}

/* A fixed pattern of ranges in a 96-page region: singles, runs, neighbours
 * that coalesce, and untouched canaries between them. */
static const struct {
	size_t first, n;
} ranges[] = {{1, 1}, {3, 2}, {5, 3}, {10, 8}, {20, 1}, {22, 1}, {40, 30}, {90, 4}};

static bool in_ranges(size_t i)
{
	for (size_t r = 0; r < sizeof(ranges) / sizeof(ranges[0]); r++)
		if (i >= ranges[r].first && i < ranges[r].first + ranges[r].n)
			return true;
	return false;
}

static void purge_exactly(int mode, unsigned flags, unsigned batch)
{
	const size_t n = 96;
	char *r = map_region(n);
	purge_queue *q = mkq(mode, 0, flags);

	fill_region(r, n);
	purge_set_batch(q, batch);
	for (size_t k = 0; k < sizeof(ranges) / sizeof(ranges[0]); k++)
		cr_assert_eq(purge_enqueue(q, r + ranges[k].first * PAGE, ranges[k].n * PAGE), 0);
	cr_assert_eq(purge_flush(q), 0);
	for (size_t i = 0; i < n; i++)
		expect_page(r, i, in_ranges(i));
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.failed_ranges, 0);
	cr_assert_eq(st.zeroed, 1);
	if (mode == PURGE_MODE_LOOP)
		cr_assert_eq(st.pmadv_calls, 0);
	else
		cr_assert_eq(st.madv_calls, 0);
	assert_identity(q);
	purge_queue_destroy(q);
}

Test(kernel, auto_path_purges_exactly)
{
	purge_exactly(PURGE_MODE_AUTO, 0, 1024);
	purge_exactly(PURGE_MODE_AUTO, PURGE_NO_COALESCE, 3);
}

Test(kernel, vectored_path_purges_exactly)
{
	purge_exactly(PURGE_MODE_VECTORED, 0, 2);
	purge_exactly(PURGE_MODE_VECTORED, PURGE_NO_COALESCE, 1);
}

Test(kernel, loop_path_purges_exactly)
{
	purge_exactly(PURGE_MODE_LOOP, 0, 1024);
	purge_exactly(PURGE_MODE_LOOP, PURGE_NO_COALESCE, 1024);
}

Test(kernel, probe_matches_the_kernel)
{
	int b = purge_backend(MADV_DONTNEED);
	cr_assert(b == PURGE_BACKEND_VECTORED || b == PURGE_BACKEND_LOOP);
	cr_assert_eq(purge_backend(MADV_DONTNEED), b, "stable");
	for (int adv = 0; adv < 32; adv++) {
		int r = purge_backend(adv);
		bool ours = adv == 0 || adv == MADV_DONTNEED || adv == MADV_FREE ||
		            adv == MADV_COLD || adv == MADV_PAGEOUT || adv == MADV_DONTNEED_LOCKED;
		cr_assert_eq(r < 0, !ours, "advice %d -> %d", adv, r);
	}
}

/* One unmapped hole and one mlocked range in a batch: both reported with the
 * kernel's errno; every other range purged; the locked one keeps its bytes. */
static void bad_ranges(int mode)
{
	const size_t n = 40;
	char *r = map_region(n);
	purge_queue *q = mkq(mode, 0, 0);

	fill_region(r, n);
	cr_assert_eq(raw_mlock(r + 20 * PAGE, 4 * PAGE), 0);
	size_t spans[][2] = {{2, 4}, {10, 4}, {20, 4}, {30, 4}};
	for (size_t k = 0; k < 4; k++)
		cr_assert_eq(purge_enqueue(q, r + spans[k][0] * PAGE, spans[k][1] * PAGE), 0);
	cr_assert_eq(munmap(r + 11 * PAGE, PAGE), 0);
	int nf = purge_flush(q);
	for (unsigned i = 0; i < fails.n; i++)
		cr_log_info("failure %u: page %ld +%zu err %d", i,
		            (long)(((char *)fails.f[i].addr - r) / (long)PAGE),
		            fails.f[i].len / PAGE, fails.f[i].err);
	cr_assert_eq(nf, 2, "%d failures", nf);
	cr_assert_eq(fails.n, 2);
	cr_assert_eq(fails.f[0].addr, r + 10 * PAGE);
	cr_assert_eq(fails.f[0].err, -ENOMEM);
	cr_assert_eq(fails.f[1].addr, r + 20 * PAGE);
	cr_assert_eq(fails.f[1].err, -EINVAL);
	for (size_t i = 0; i < n; i++)
		if (i < 10 || i >= 14)
			expect_page(r, i, (i >= 2 && i < 6) || (i >= 30 && i < 34));
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.failed_bytes, 8 * PAGE);
	cr_assert_eq(st.purged_bytes, 8 * PAGE);
	assert_identity(q);
	raw_munlock(r + 20 * PAGE, 4 * PAGE);
}

Test(kernel, unmapped_and_mlocked_reported_rest_purged_auto)
{
	bad_ranges(PURGE_MODE_AUTO);
}

Test(kernel, unmapped_and_mlocked_reported_rest_purged_vectored)
{
	bad_ranges(PURGE_MODE_VECTORED);
}

Test(kernel, unmapped_and_mlocked_reported_rest_purged_loop)
{
	bad_ranges(PURGE_MODE_LOOP);
}

Test(kernel, dontneed_locked_purges_mlocked_pages)
{
	char *r = map_region(8);
	purge_queue *q = mkq(PURGE_MODE_AUTO, MADV_DONTNEED_LOCKED, 0);

	fill_region(r, 8);
	cr_assert_eq(raw_mlock(r, 8 * PAGE), 0);
	cr_assert_eq(purge_enqueue(q, r + 2 * PAGE, 3 * PAGE), 0);
	cr_assert_eq(purge_flush(q), 0);
	for (size_t i = 0; i < 8; i++)
		cr_assert(page_all(r + i * PAGE, i >= 2 && i < 5 ? 0 : pattern_of(i)), "page %zu",
		          i);
	raw_munlock(r, 8 * PAGE);
}

Test(kernel, prot_none_ranges_are_purged)
{
	char *r = map_region(8);
	purge_queue *q = mkq(PURGE_MODE_AUTO, 0, 0);

	fill_region(r, 8);
	cr_assert_eq(mprotect(r + 2 * PAGE, 2 * PAGE, PROT_NONE), 0);
	cr_assert_eq(purge_enqueue(q, r + 2 * PAGE, 2 * PAGE), 0);
	cr_assert_eq(purge_flush(q), 0);
	cr_assert(!resident(r + 2 * PAGE));
	cr_assert_eq(mprotect(r + 2 * PAGE, 2 * PAGE, PROT_READ | PROT_WRITE), 0);
	for (size_t i = 0; i < 8; i++)
		expect_page(r, i, i == 2 || i == 3);
}

/* MADV_FREE: private anon fine; shared and file-backed ranges are EINVAL,
 * reported, and the others still purged.  No coalescing: mmap may place the
 * three mappings side by side, and a merged range fails as a whole. */
static void free_on_shared(int mode)
{
	char path[] = "/tmp/purge-test-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	unlink(path);
	cr_assert_eq(ftruncate(fd, 4 * PAGE), 0);
	char *file = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	char *shm = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char *anon = map_region(4);
	cr_assert(file != MAP_FAILED && shm != MAP_FAILED);
	memset(file, 7, 4 * PAGE), memset(shm, 7, 4 * PAGE), memset(anon, 7, 4 * PAGE);
	purge_queue *q = mkq(mode, MADV_FREE, PURGE_NO_COALESCE);
	cr_assert_eq(stats_of(q).zeroed, 0);
	cr_assert_eq(purge_enqueue(q, file, 4 * PAGE), 0);
	cr_assert_eq(purge_enqueue(q, shm, 4 * PAGE), 0);
	cr_assert_eq(purge_enqueue(q, anon, 4 * PAGE), 0);
	cr_assert_eq(purge_flush(q), 2);
	for (unsigned i = 0; i < 2; i++) {
		cr_assert_eq(fails.f[i].err, -EINVAL);
		cr_assert(fails.f[i].addr == file || fails.f[i].addr == shm);
	}
	cr_assert_eq(stats_of(q).purged_bytes, 4 * PAGE);
	cr_assert(page_all(shm, 7), "shared memory keeps its bytes");
	assert_identity(q);
	close(fd);
}

Test(kernel, free_rejected_on_shared_and_file_auto)
{
	free_on_shared(PURGE_MODE_AUTO);
}

Test(kernel, free_rejected_on_shared_and_file_loop)
{
	free_on_shared(PURGE_MODE_LOOP);
}

/* More than MAX_RW_COUNT in one batch: calls are cut, nothing is left. */
static void over_two_gib(int mode)
{
	const size_t len = 3ul << 30, step = 256ul << 20;
	char *r = mmap(NULL, len, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	cr_assert_neq(r, MAP_FAILED);
	purge_queue *q = mkq(mode, 0, 0);
	for (size_t off = 0; off < len; off += step)
		r[off + step - 1] = 1, r[off] = 1;
	for (size_t off = 0; off < len; off += 1ul << 30)
		cr_assert_eq(purge_enqueue(q, r + off, 1ul << 30), 0);
	cr_assert_eq(purge_flush(q), 0);
	for (size_t off = 0; off < len; off += step) {
		cr_assert(!resident(r + off) && r[off] == 0, "offset %zu MiB", off >> 20);
		cr_assert(r[off + step - 1] == 0);
	}
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.purged_bytes, len);
	cr_assert_eq(st.short_counts, 0);
	cr_assert_geq(st.pmadv_calls + st.madv_calls, 2, "cut at MAX_RW_COUNT");
	munmap(r, len);
}

Test(kernel, batch_over_two_gib_vectored)
{
	over_two_gib(PURGE_MODE_VECTORED);
}

Test(kernel, batch_over_two_gib_loop)
{
	over_two_gib(PURGE_MODE_LOOP);
}

/* The queue is duplicated by fork(); each process's flush advises its own
 * mm (PIDFD_SELF names the caller), never the other's. */
static void fork_case(bool child_flushes)
{
	const size_t n = 16;
	char *r = map_region(n);
	purge_queue *q = mkq(PURGE_MODE_AUTO, 0, 0);
	int go[2];

	fill_region(r, n);
	cr_assert_eq(purge_enqueue(q, r + 4 * PAGE, 8 * PAGE), 0);
	cr_assert_eq(pipe(go), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char c;
		if (child_flushes) {
			purge_flush(q);
			for (size_t i = 0; i < n; i++)
				if (!page_all(r + i * PAGE, i >= 4 && i < 12 ? 0 : pattern_of(i)))
					_exit(1);
			_exit(write(go[1], "x", 1) == 1 ? 0 : 2);
		}
		if (read(go[0], &c, 1) != 1)
			_exit(3);
		for (size_t i = 0; i < n; i++)
			if (!page_all(r + i * PAGE, pattern_of(i)))
				_exit(4);
		_exit(0);
	}
	if (!child_flushes) {
		cr_assert_eq(purge_flush(q), 0);
		for (size_t i = 0; i < n; i++)
			expect_page(r, i, i >= 4 && i < 12);
		cr_assert_eq(write(go[1], "x", 1), 1);
	}
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	if (child_flushes)
		for (size_t i = 0; i < n; i++)
			expect_page(r, i, false);
}

Test(kernel, fork_child_flush_leaves_parent_alone)
{
	fork_case(true);
}

Test(kernel, fork_parent_flush_leaves_child_alone)
{
	fork_case(false);
}

Test(kernel, destroy_flushes_pending)
{
	char *r = map_region(4);
	purge_queue *q = mkq(PURGE_MODE_AUTO, 0, 0);

	fill_region(r, 4);
	cr_assert_eq(purge_enqueue(q, r + PAGE, 2 * PAGE), 0);
	cr_assert_eq(purge_queue_destroy(q), 0);
	for (size_t i = 0; i < 4; i++)
		expect_page(r, i, i == 1 || i == 2);
}

Test(kernel, caller_memory_queue)
{
	static char mem[1 << 16] __attribute__((aligned(64)));
	struct purge_config cfg = {.capacity = 64};
	purge_queue *q;
	char *r = map_region(4);

	cr_assert_leq(purge_queue_bytes(64), sizeof(mem));
	cr_assert_eq(purge_queue_init(&q, mem, sizeof(mem), &cfg), 0);
	fill_region(r, 4);
	cr_assert_eq(purge_enqueue(q, r, PAGE), 0);
	cr_assert_eq(purge_queue_destroy(q), 0);
	expect_page(r, 0, true);
	expect_page(r, 1, false);
}

/* Sealed memory (mseal, Linux 6.10+): discard advice on a sealed read-only
 * private mapping is EPERM, for madvise and process_madvise alike.  That is a
 * bad range, not a refused system call: reported, the path stays vectored. */
#ifndef SYS_mseal
#define SYS_mseal 462
#endif
static void sealed(int mode, size_t where)
{
	const size_t n = 12;
	char *r = map_region(n);
	purge_queue *q = mkq(mode, 0, 0);

	fill_region(r, n);
	char *s = r + 4 * where * PAGE;
	cr_assert_eq(mprotect(s, 2 * PAGE, PROT_READ), 0);
	if (syscall(SYS_mseal, s, 2 * PAGE, 0) != 0)
		cr_skip_test("mseal() not available (Linux 6.10+, 64-bit): %s", strerror(errno));
	for (size_t k = 0; k < 3; k++)
		cr_assert_eq(purge_enqueue(q, r + 4 * k * PAGE, 2 * PAGE), 0);
	cr_assert_eq(purge_flush(q), 1);
	cr_assert_eq(fails.f[0].addr, s);
	cr_assert_eq(fails.f[0].err, -EPERM);
	for (size_t i = 0; i < n; i++)
		expect_page(r, i, i % 4 < 2 && i / 4 != where);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.fallbacks, 0);
	cr_assert_eq(purge_backend(MADV_DONTNEED),
	             vectored_here() ? PURGE_BACKEND_VECTORED : PURGE_BACKEND_LOOP);
	assert_identity(q);
}

Test(kernel, sealed_first_range_auto)
{
	sealed(PURGE_MODE_AUTO, 0);
}

Test(kernel, sealed_middle_range_auto)
{
	sealed(PURGE_MODE_AUTO, 1);
}

Test(kernel, sealed_middle_range_loop)
{
	sealed(PURGE_MODE_LOOP, 1);
}

/* hugetlb: a whole huge page is purged; its neighbour keeps its bytes.  Needs
 * reserved huge pages (vm.nr_hugepages; .ci/run reserves a few). */
Test(kernel, hugetlb_whole_huge_pages)
{
	const size_t huge = 2ul << 20;
	char *h = mmap(NULL, 2 * huge, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (h == MAP_FAILED)
		cr_skip_test("no 2 MiB huge pages to map (vm.nr_hugepages is 0?): %s",
		             strerror(errno));
	purge_queue *q = mkq(PURGE_MODE_AUTO, 0, 0);
	memset(h, 0x5a, 2 * huge);
	cr_assert_eq(purge_enqueue(q, h + huge, huge), 0);
	cr_assert_eq(purge_flush(q), 0);
	cr_assert_eq(h[huge], 0);
	cr_assert_eq(h[2 * huge - 1], 0);
	cr_assert_eq(h[0], 0x5a);
	cr_assert_eq(h[huge - 1], 0x5a);
	munmap(h, 2 * huge);
}

/* Only whole huge pages are discarded (the kernel rounds the end down): a
 * 4 KiB range inside one is "advised" yet frees and zeroes nothing.  The
 * library counts advised bytes, so it reports it purged: documented. */
Test(kernel, hugetlb_sub_page_range_is_a_silent_no_op)
{
	const size_t huge = 2ul << 20;
	char *h = mmap(NULL, huge, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (h == MAP_FAILED)
		cr_skip_test("no 2 MiB huge pages to map (vm.nr_hugepages is 0?): %s",
		             strerror(errno));
	purge_queue *q = mkq(PURGE_MODE_AUTO, 0, 0);
	memset(h, 0x5a, huge);
	cr_assert_eq(purge_enqueue(q, h, PAGE), 0);
	cr_assert_eq(purge_flush(q), 0);
	cr_assert_eq(h[0], 0x5a, "the kernel left the huge page alone");
	munmap(h, huge);
}

/* One bad page among ten adjacent pages enqueued one by one, which
 * coalescing merges into one iovec: only the bad page is reported, every
 * good page is purged, wherever the bad one sits and on every path.  The
 * bad page is mlocked (DONTNEED: EINVAL), shared (FREE: EINVAL) or sealed
 * (DONTNEED: EPERM, Linux 6.10+). */
enum bad_kind { BAD_MLOCK, BAD_SHARED, BAD_SEALED };

static bool make_bad(char *p, enum bad_kind kind)
{
	if (kind == BAD_MLOCK)
		return raw_mlock(p, PAGE) == 0;
	if (kind == BAD_SHARED)
		return mmap(p, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED,
		            -1, 0) == p &&
		       (memset(p, pattern_of(0), PAGE), true);
	return mprotect(p, PAGE, PROT_READ) == 0 && syscall(SYS_mseal, p, PAGE, 0) == 0;
}

static void merged_bad(int mode, enum bad_kind kind, size_t where)
{
	const size_t n = 10;
	int advice = kind == BAD_SHARED ? MADV_FREE : MADV_DONTNEED;
	char *r = map_region(n);
	purge_queue *q = mkq(mode, advice, 0);

	fill_region(r, n);
	if (!make_bad(r + where * PAGE, kind))
		cr_skip_test("cannot make a %s page here: %s",
		             kind == BAD_SEALED ? "sealed (mseal, 6.10+)" : "bad", strerror(errno));
	unsigned char want = (unsigned char)r[where * PAGE];
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(purge_enqueue(q, r + i * PAGE, PAGE), 0);
	cr_assert_eq(purge_flush(q), 1, "mode %d kind %d bad page %zu", mode, kind, where);
	cr_assert_eq(fails.f[0].addr, r + where * PAGE);
	cr_assert_eq(fails.f[0].len, PAGE);
	cr_assert_eq(fails.f[0].err, kind == BAD_SEALED ? -EPERM : -EINVAL);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.purged_bytes, (n - 1) * PAGE);
	cr_assert_eq(st.failed_bytes, PAGE);
	cr_assert(page_all(r + where * PAGE, want), "the bad page keeps its bytes");
	for (size_t i = 0; i < n && advice == MADV_DONTNEED; i++)
		if (i != where)
			expect_page(r, i, true);
	assert_identity(q);
	purge_queue_destroy(q);
	if (kind == BAD_MLOCK)
		raw_munlock(r + where * PAGE, PAGE);
}

static void merged_bad_everywhere(enum bad_kind kind)
{
	const int modes[] = {PURGE_MODE_AUTO, PURGE_MODE_VECTORED, PURGE_MODE_LOOP};
	const size_t where[] = {0, 4, 9};

	for (size_t m = 0; m < 3; m++) {
		if (modes[m] == PURGE_MODE_VECTORED && !vectored_here())
			continue; /* mkq would skip the whole test */
		for (size_t w = 0; w < 3; w++)
			merged_bad(modes[m], kind, where[w]);
	}
}

Test(kernel, merged_neighbours_of_an_mlocked_page_are_purged)
{
	merged_bad_everywhere(BAD_MLOCK);
}

Test(kernel, merged_neighbours_of_a_shared_page_are_freed)
{
	merged_bad_everywhere(BAD_SHARED);
}

Test(kernel, merged_neighbours_of_a_sealed_page_are_purged)
{
	merged_bad_everywhere(BAD_SEALED);
}

/* A probe must conclude only from an answer about the call: under
 * mlockall(MCL_FUTURE) its scratch page used to be locked, DONTNEED said
 * EINVAL, and the process stayed on the loop even after munlockall(). */
Test(kernel, probe_under_mlockall_stays_vectored)
{
	struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	cr_skip_test("mlockall would lock the sanitizer's shadow memory (terabytes)");
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
	cr_skip_test("mlockall would lock the sanitizer's shadow memory (terabytes)");
#endif
#endif
	setrlimit(RLIMIT_MEMLOCK, &rl);
	if (syscall(SYS_mlockall, MCL_CURRENT | MCL_FUTURE) != 0)
		cr_skip_test("mlockall: %s (needs CAP_IPC_LOCK or a large RLIMIT_MEMLOCK)",
		             strerror(errno));
	int under = purge_backend(MADV_DONTNEED);
	syscall(SYS_munlockall);
	if (under == PURGE_BACKEND_LOOP && purge_backend(MADV_FREE) == PURGE_BACKEND_LOOP)
		cr_skip_test("process_madvise(PIDFD_SELF) not usable here at all");
	cr_assert_eq(under, PURGE_BACKEND_VECTORED, "the probe blamed the call for its page");
	cr_assert_eq(purge__probe_peek(MADV_DONTNEED), PURGE_BACKEND_VECTORED, "and remembers it");
	cr_assert_eq(purge_backend(MADV_DONTNEED), PURGE_BACKEND_VECTORED);
}

static bool all_bytes(const char *p, size_t len, unsigned char b)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)p[i] != b)
			return false;
	return true;
}

/* Issue 15.1: two sub-page objects of one pending page.  The first cancel
 * takes back the whole page's purge and answers 1; the second finds
 * nothing pending and answers 0, yet its bytes were never purged: the rule
 * of purge.h (condition 4) is what tells the allocator so. */
Test(kernel, sub_page_cancels_answer_for_whole_pages)
{
	char *r = map_region(2);
	purge_queue *q = mkq(PURGE_MODE_AUTO, 0, 0);
	size_t half = PAGE / 2;

	memset(r, 0xab, 2 * PAGE);
	cr_assert_eq(purge_enqueue(q, r, 2 * PAGE), 0);
	cr_assert_eq(purge_cancel(q, r, half), 1, "object A: page 0 was pending");
	cr_assert_eq(purge_cancel(q, r + half, half), 0, "object B: nothing left in page 0");
	cr_assert(all_bytes(r + half, half, 0xab), "B was never purged: it keeps its bytes");
	cr_assert_eq(purge_flush(q), 0);
	cr_assert(all_bytes(r, PAGE, 0xab), "page 0 is no longer pending");
	cr_assert(page_all(r + PAGE, 0), "page 1 was purged");

	/* the same objects of a page already purged: both answers 0, both zero */
	cr_assert_eq(purge_cancel(q, r + PAGE, half), 0);
	cr_assert(all_bytes(r + PAGE, half, 0));
	memset(r + PAGE, 0x5a, half); /* A in use */
	cr_assert_eq(purge_cancel(q, r + PAGE + half, half), 0);
	cr_assert(all_bytes(r + PAGE + half, half, 0), "B: page purged, not written since");
	purge_queue_destroy(q);
}

/* Issue 15.5: cancels of 64 MiB to 4 GiB over pending ranges spread across
 * an 8 GiB reservation (MAP_NORESERVE: only the touched pages exist). */
Test(kernel, large_cancels_take_back_everything_inside)
{
	const size_t gib = (size_t)1 << 30, span = 8 * gib, step = 16u << 20;
	char *r = mmap(NULL, span, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	cr_assert_neq(r, MAP_FAILED);
	purge_queue *q = mkq(PURGE_MODE_AUTO, 0, 0);
	size_t n = span / step;

	for (size_t i = 0; i < n; i++) {
		memset(r + i * step, 0x11, 2 * PAGE);
		cr_assert_eq(purge_enqueue(q, r + i * step, 2 * PAGE), 0);
	}
	/* three intervals back to back: [PAGE, end) of the reservation */
	size_t sizes[] = {64u << 20, 1 * gib, 4 * gib}, end = PAGE;
	for (size_t k = 0; k < 3; k++) {
		cr_assert_eq(purge_cancel(q, r + end, sizes[k]), 1, "cancel of %zu MiB",
		             sizes[k] >> 20);
		end += sizes[k];
	}
	cr_assert_eq(purge_flush(q), 0);
	for (size_t i = 0; i < n; i++) {
		size_t off = i * step; /* pages off and off + PAGE were pending */
		bool p0 = off >= PAGE && off < end, p1 = off + PAGE < end;
		cr_assert(page_all(r + off, p0 ? 0x11 : 0), "piece %zu page 0", i);
		cr_assert(page_all(r + off + PAGE, p1 ? 0x11 : 0), "piece %zu page 1", i);
	}
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.failed_ranges, 0);
	assert_identity(q);
	purge_queue_destroy(q);
	munmap(r, span);
}
