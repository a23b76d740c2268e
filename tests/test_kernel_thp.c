/* SPDX-License-Identifier: MIT */
/*
 * PURGE_HUGE against the real kernel's transparent huge pages: whole
 * frames freed in pieces go whole, a held half settles by age, and the
 * event loop of docs/allocator.md splits nothing; a watch on the queue's
 * calls asks the page tables which call split a huge page.  The other
 * real-kernel tests: test_kernel.c.
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

/* The bytes of [p, p + len) resident and mapped by huge pages, from this
 * process's own page tables (tests/pagemap.h); skips where the kernel
 * cannot tell. */
static struct pm_bytes mapped(const void *p, size_t len)
{
	struct pm_bytes t;
	int err = pm_scan(p, len, &t);

	if (err)
		cr_skip_test("PAGEMAP_SCAN on /proc/self/pagemap: %s (Linux 6.7+)", strerror(-err));
	return t;
}

/* n huge frames, aligned, written, each checked to be huge-backed;
 * skips with the reason when THP cannot give them. */
static char *huge_frames(size_t n, size_t frame)
{
	char *m =
	    mmap(NULL, (n + 1) * frame, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(m, MAP_FAILED);
	char *r = (char *)(((uintptr_t)m + frame - 1) & ~(frame - 1));
	if (madvise(r, n * frame, MADV_HUGEPAGE) != 0)
		cr_skip_test("MADV_HUGEPAGE refused: no transparent huge pages here");
	memset(r, 0x5a, n * frame);
	if (mapped(r, n * frame).huge != n * frame)
		cr_skip_test("the kernel gave no huge pages for the whole region (THP %s)",
		             "never, or memory too fragmented");
	return r;
}

/* Every byte of [p, p + len) still mapped by huge pages: nothing split. */
static void expect_huge(const char *p, size_t len, const char *what)
{
	struct pm_bytes t = mapped(p, len);

	cr_assert_eq(t.huge, len, "%s: %zu of %zu bytes mapped by huge pages", what, t.huge, len);
}

/* ---- the split watch: the real kernel, and which calls split a huge page - */

/* The system calls of a watched queue go to the real kernel; before each,
 * the watch asks this process's page tables about every frame the call
 * covers in part: one that a huge page maps is split by that call (the
 * kernel splits the PMD to purge part of it).  A frame split and then
 * purged to its end reads like a frame purged whole afterwards: only the
 * calls tell them apart.  Counts this process's splits alone, unlike
 * thp_split_pmd in /proc/vmstat. */
#define WATCH_MAX 64
static struct {
	struct purge__backend be;
	size_t frame, bytes;
	void *mem;
	uintptr_t cut[WATCH_MAX]; /* the frames split, first call first */
	unsigned ncut;
	int err; /* a scan failed, or more than WATCH_MAX splits */
} watch;

static void watch_frame(uintptr_t f)
{
	struct pm_bytes t;

	for (unsigned i = 0; i < watch.ncut; i++)
		if (watch.cut[i] == f)
			return;
	int err = pm_scan((void *)f, watch.frame, &t);
	if (err || (t.huge && watch.ncut == WATCH_MAX))
		watch.err = err ? err : -ENOSPC;
	else if (t.huge)
		watch.cut[watch.ncut++] = f;
}

static void watch_range(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p, b = a + len, F = watch.frame;
	uintptr_t f0 = a & ~(F - 1), f1 = (b - 1) & ~(F - 1);

	if (!len)
		return;
	if (a != f0 || b < f0 + F)
		watch_frame(f0);
	if (f1 != f0 && b != f1 + F)
		watch_frame(f1);
}

static ssize_t watch_pmadv(void *ctx, const struct iovec *iov, size_t n, int advice)
{
	(void)ctx;
	for (size_t i = 0; i < n; i++)
		watch_range(iov[i].iov_base, iov[i].iov_len);
	return purge__sys_backend.pmadv(purge__sys_backend.ctx, iov, n, advice);
}

static int watch_madv(void *ctx, void *addr, size_t len, int advice)
{
	(void)ctx;
	watch_range(addr, len);
	return purge__sys_backend.madv(purge__sys_backend.ctx, addr, len, advice);
}

/* A queue on the real kernel, its calls watched (watch_end() ends it). */
static purge_queue *watch_queue(struct purge_config *cfg)
{
	purge_queue *q;

	watch.be = purge__sys_backend;
	watch.be.pmadv = watch_pmadv;
	watch.be.madv = watch_madv;
	watch.frame = purge__sys_backend.frame_size(NULL);
	watch.ncut = 0;
	watch.err = 0;
	watch.bytes = purge_queue_bytes(cfg->capacity);
	watch.mem =
	    mmap(NULL, watch.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(watch.mem, MAP_FAILED);
	cr_assert_eq(purge__queue_init_backend(&q, watch.mem, watch.bytes, cfg, &watch.be), 0);
	return q;
}

/* The frames the watched calls split so far. */
static unsigned watch_splits(void)
{
	cr_assert_eq(watch.err, 0, "the split watch failed: %s", strerror(-watch.err));
	return watch.ncut;
}

static void watch_end(purge_queue *q)
{
	assert_identity(q);
	cr_assert_eq(purge_queue_destroy(q), 0);
	munmap(watch.mem, watch.bytes);
}

/* Whole frames freed in pieces go whole, and no call purges part of a huge
 * page until purge_flush settles a half frame: that one call splits it,
 * and its live half stays resident, no longer mapped by a huge page. */
Test(kernel, huge_frames_freed_in_pieces_never_split)
{
	const size_t frame = purge__sys_backend.frame_size(NULL), n = 8, piece = 128 << 10;
	char *r = huge_frames(n + 2, frame); /* frames 0 and n + 1: canaries */
	struct purge_config cfg = {.capacity = 4096,
	                           .flags = PURGE_HUGE,
	                           .max_pending_bytes = n * frame / 8,
	                           .on_failure = record_failure,
	                           .arg = &fails};

	fails.n = 0;
	purge_queue *q = watch_queue(&cfg);
	/* frames 1..n-1 freed whole in pieces, two at a time alternately;
	 * frame n only in its first half: the other half stays live */
	for (size_t f = 1; f < n; f += 2)
		for (size_t off = 0; off < frame; off += piece)
			for (size_t g = f; g < f + 2 && g < n; g++)
				cr_assert_eq(purge_enqueue(q, r + g * frame + off, piece), 0);
	for (size_t off = 0; off < frame / 2; off += piece)
		cr_assert_eq(purge_enqueue(q, r + n * frame + off, piece), 0);
	cr_assert_eq(purge_flush_to(q, frame / 2), 0, "every whole frame goes");
	cr_assert_eq(watch_splits(), 0, "a call purged part of a huge page");
	/* read before any page is touched: a read maps the zero page */
	cr_assert_eq(mapped(r + frame, (n - 1) * frame).present, 0, "whole frames freed");
	expect_huge(r, frame, "canary frame 0");
	expect_huge(r + n * frame, frame, "held frame n");
	expect_huge(r + (n + 1) * frame, frame, "canary frame n + 1");
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.frames_whole, n - 1);
	cr_assert_eq(st.frames_split, 0);
	cr_assert_eq(st.pending_bytes, frame / 2, "the live frame's free half waits");
	cr_assert(page_all(r + n * frame, 0x5a), "held: not purged");
	cr_assert(page_all(r + n * frame + frame / 2, 0x5a), "live half intact");
	cr_assert(page_all(r, 0x5a) && page_all(r + (n + 1) * frame - PAGE, 0x5a), "canaries");
	cr_assert_eq(purge_flush(q), 0, "purge_flush settles the held half");
	cr_assert_eq(watch_splits(), 1, "that purge split frame n");
	cr_assert_eq(watch.cut[0], (uintptr_t)(r + n * frame));
	struct pm_bytes t = mapped(r + n * frame, frame);
	cr_assert_eq(t.present, frame / 2, "frame n: its free half gone, its live half resident");
	cr_assert_eq(t.huge, 0, "frame n: split, no longer mapped by a huge page");
	expect_huge(r, frame, "canary frame 0");
	expect_huge(r + (n + 1) * frame, frame, "canary frame n + 1");
	for (size_t f = 1; f <= n; f++)
		cr_assert(page_all(r + f * frame, 0) &&
		          page_all(r + f * frame + frame / 2 - PAGE, 0));
	cr_assert(page_all(r + n * frame + frame / 2, 0x5a), "live half intact");
	cr_assert_eq(stats_of(q).frames_split, 1);
	cr_assert_eq(fails.n, 0);
	watch_end(q);
}

Test(kernel, huge_held_half_settles_by_age)
{
	const size_t frame = purge__sys_backend.frame_size(NULL);
	char *r = huge_frames(2, frame);
	struct purge_config cfg = {.capacity = 64,
	                           .flags = PURGE_HUGE,
	                           .max_pending_bytes = frame / 8,
	                           .max_delay_ns = 50000000};
	purge_queue *q;

	cr_assert_eq(purge_queue_create(&q, &cfg), 0);
	for (size_t off = 0; off < frame / 2; off += 64 << 10)
		cr_assert_eq(purge_enqueue(q, r + off, 64 << 10), 0);
	cr_assert_eq(stats_of(q).purged_bytes, 0, "held");
	usleep(80000);                                      /* past max_delay_ns */
	cr_assert_eq(purge_enqueue(q, r + frame, 4096), 0); /* the age threshold */
	struct purge_stats st = stats_of(q);
	cr_assert_geq(st.purged_bytes, frame / 2, "settled once max_delay_ns old");
	cr_assert(page_all(r, 0) && page_all(r + frame / 2, 0x5a));
	assert_identity(q);
	purge_queue_destroy(q);
}

/* The event loop of docs/allocator.md (issue 22 item 8) on real huge pages: halves of
 * frames freed, the loop's purge_flush_due holds them; the other halves
 * freed later go whole with them: nothing split. */
Test(kernel, huge_event_loop_splits_nothing)
{
	const size_t frame = purge__sys_backend.frame_size(NULL), n = 4;
	const uint64_t age = 20000000; /* 20 ms */
	char *r = huge_frames(n, frame);
	struct purge_config cfg = {.flags = PURGE_HUGE, .max_delay_ns = 60000000000ull};
	uint64_t next;

	purge_queue *q = watch_queue(&cfg);
	for (int half = 0; half < 2; half++) {
		for (size_t f = 0; f < n; f++)
			for (size_t off = 0; off < frame / 2; off += 64 << 10)
				cr_assert_eq(purge_enqueue(q,
				                           r + f * frame + half * frame / 2 + off,
				                           64 << 10),
				             0);
		cr_assert_geq(purge_flush_due(q, age, &next), 0);
		cr_assert_neq(next, UINT64_MAX);
		usleep(30000); /* past the age: the loop wakes at next */
		cr_assert_geq(purge_flush_due(q, age, &next), 0);
		if (half == 0)
			expect_huge(r, n * frame, "the first halves are held");
	}
	struct purge_stats st = stats_of(q);
	cr_assert_eq(next, UINT64_MAX, "nothing left");
	cr_assert_eq(watch_splits(), 0, "a call purged part of a huge page");
	cr_assert_eq(mapped(r, n * frame).present, 0, "every frame freed");
	cr_assert_eq(st.frames_whole, n);
	cr_assert_eq(st.frames_split, 0);
	for (size_t f = 0; f < n; f++)
		cr_assert(page_all(r + f * frame, 0) && page_all(r + f * frame + frame - PAGE, 0));
	watch_end(q);
}
