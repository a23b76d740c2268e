/* SPDX-License-Identifier: MIT */
/*
 * Sandboxes: a seccomp filter makes process_madvise answer EPERM (Docker,
 * containerd), ENOSYS or EINVAL, from the start or after the first vectored
 * flush.  The loop must leave memory exactly as the vectored path would.
 * Each Criterion test runs in its own process, so filters do not leak.
 */
#include <errno.h>
#include <sys/syscall.h>

#include "common.h"
#include "internal.h"
#include "mem.h"
#include "syscall.h"

#ifdef HAVE_SECCOMP
#include <seccomp.h>

#ifndef __NR_process_madvise
#define __NR_process_madvise 440
#endif

static void block_process_madvise(int err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	cr_assert_not_null(ctx);
	cr_assert_eq(seccomp_rule_add(ctx, SCMP_ACT_ERRNO((unsigned)err), __NR_process_madvise, 0),
	             0);
	cr_assert_eq(seccomp_load(ctx), 0);
	seccomp_release(ctx);
}
/* A kernel before 6.7 has no PAGEMAP_SCAN: the ioctl answers err. */
static void block_pagemap_scan(int err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	cr_assert_not_null(ctx);
	struct scmp_arg_cmp cmd = {.arg = 1, .op = SCMP_CMP_EQ, .datum_a = PAGEMAP_SCAN};
	cr_assert_eq(seccomp_rule_add(ctx, SCMP_ACT_ERRNO((unsigned)err), SCMP_SYS(ioctl), 1, cmd),
	             0);
	cr_assert_eq(seccomp_load(ctx), 0);
	seccomp_release(ctx);
}
#define NEED_SECCOMP()
#else
static void block_process_madvise(int err)
{
	(void)err;
}

static void block_pagemap_scan(int err)
{
	(void)err;
}
#define NEED_SECCOMP() cr_skip_test("built without libseccomp (install libseccomp-dev)")
#endif

static const size_t N = 64;

static void enqueue_every_other(purge_queue *q, char *r, size_t from, size_t to)
{
	for (size_t i = from; i < to; i += 2)
		cr_assert_eq(purge_enqueue(q, r + i * PAGE, PAGE), 0);
}

static void check_every_other(char *r, size_t from, size_t to)
{
	for (size_t i = 0; i < N; i++)
		expect_page(r, i, i >= from && i < to && (i - from) % 2 == 0);
}

static void blocked_from_start(int err)
{
	NEED_SECCOMP();
	char *r = map_region(N);
	purge_queue *q;

	fill_region(r, N);
	block_process_madvise(err);
	cr_assert_eq(purge_backend(MADV_DONTNEED), PURGE_BACKEND_LOOP);
	cr_assert_eq(purge__probe_peek(MADV_DONTNEED), PURGE_BACKEND_LOOP,
	             "a refusal of the call is remembered, not probed again at every flush");
	cr_assert_eq(purge_queue_create(&q, NULL), 0);
	enqueue_every_other(q, r, 0, N);
	cr_assert_eq(purge_flush(q), 0);
	check_every_other(r, 0, N);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.backend, PURGE_BACKEND_LOOP);
	cr_assert_eq(st.pmadv_calls, 0);
	cr_assert_eq(st.madv_calls, N / 2);
	assert_identity(q);
}

Test(seccomp, eperm_from_the_start)
{
	blocked_from_start(EPERM);
}

Test(seccomp, enosys_from_the_start)
{
	blocked_from_start(ENOSYS);
}

Test(seccomp, einval_from_the_start)
{
	blocked_from_start(EINVAL);
}

/* A filter installed after the first vectored flush (seccomp is inherited and
 * can be added at any time): the next flush switches to the loop mid-batch
 * and loses nothing. */
static void blocked_mid_run(int err)
{
	NEED_SECCOMP();
	char *r = map_region(N);
	purge_queue *q;

	if (purge_backend(MADV_DONTNEED) != PURGE_BACKEND_VECTORED)
		cr_skip_test("process_madvise(PIDFD_SELF) not usable here: nothing to switch from");
	fill_region(r, N);
	cr_assert_eq(purge_queue_create(&q, NULL), 0);
	enqueue_every_other(q, r, 0, N / 2);
	cr_assert_eq(purge_flush(q), 0);
	cr_assert_gt(stats_of(q).pmadv_calls, 0);
	block_process_madvise(err);
	enqueue_every_other(q, r, N / 2, N);
	cr_assert_eq(purge_flush(q), 0);
	check_every_other(r, 0, N);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.fallbacks, 1);
	cr_assert_eq(st.backend, PURGE_BACKEND_LOOP);
	cr_assert_eq(st.failed_ranges, 0);
	cr_assert_eq(purge_backend(MADV_DONTNEED), PURGE_BACKEND_LOOP, "demoted process-wide");
	assert_identity(q);
}

Test(seccomp, eperm_after_first_flush)
{
	blocked_mid_run(EPERM);
}

Test(seccomp, enosys_after_first_flush)
{
	blocked_mid_run(ENOSYS);
}

/* Forced vectored: the refusal is reported, not hidden by the loop. */
Test(seccomp, forced_vectored_reports_eperm)
{
	NEED_SECCOMP();
	struct failures fl = {0};
	struct purge_config cfg = {
	    .mode = PURGE_MODE_VECTORED, .on_failure = record_failure, .arg = &fl};
	char *r = map_region(N);
	purge_queue *q;

	fill_region(r, N);
	block_process_madvise(EPERM);
	cr_assert_eq(purge_queue_create(&q, &cfg), 0);
	enqueue_every_other(q, r, 0, 8);
	cr_assert_eq(purge_flush(q), 4);
	for (unsigned i = 0; i < fl.n; i++)
		cr_assert_eq(fl.f[i].err, -EPERM);
	check_every_other(r, 0, 0); /* nothing purged */
	assert_identity(q);
}

/* Issue 22: where PAGEMAP_SCAN fails (ENOTTY before Linux 6.7, or a
 * sandbox), a PURGE_HUGE flush treats every frame as maybe huge, and
 * leaves errno as it found it, like every call of the library. */
Test(seccomp, pagemap_scan_refused_leaves_errno_alone)
{
	NEED_SECCOMP();
	const size_t frame = purge__sys_backend.frame_size(NULL), n = frame / PAGE;
	struct purge_config cfg = {.flags = PURGE_HUGE, .capacity = 4096};
	char *r = map_region(2 * n);
	purge_queue *q;

	fill_region(r, 2 * n);
	block_pagemap_scan(ENOTTY);
	cr_assert_eq(purge_queue_create(&q, &cfg), 0);
	/* a half frame (wherever the region's frames lie, none is whole) */
	char *f = (char *)(((uintptr_t)r + frame - 1) & ~(frame - 1));
	enqueue_every_other(q, f, 0, n / 2);
	errno = 4242;
	cr_assert_eq(purge_flush_to(q, 0), 0);
	cr_assert_eq(errno, 4242, "purge_flush_to changed errno to %d", errno);
	cr_assert_eq(stats_of(q).held_ranges, n / 4, "every frame may be huge: held");
	cr_assert_eq(purge_flush(q), 0);
	cr_assert_eq(errno, 4242, "purge_flush changed errno to %d", errno);
	cr_assert_eq(stats_of(q).frames_split, 1, "the frame may be huge: counted");
	assert_identity(q);
	purge_queue_destroy(q);
}
