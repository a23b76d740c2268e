// SPDX-License-Identifier: MIT
/* purge-bench workload: region, layout, queues, and one pass of a row. */
#include "bench-work.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* MADV_POPULATE_WRITE (5.14) is missing from older headers. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Make every page present and dirty, which is what a purge must find.
 * MADV_POPULATE_WRITE faults the missing pages in one call, about half the
 * time of one user fault per page on the 6.18 test VM; the write per page
 * then re-dirties pages that MADV_FREE left present but clean (populate
 * skips those), and is the whole job where populate is unknown. */
static void write_pages(char *p, size_t len, size_t page)
{
	volatile char *v = p;
	for (size_t off = 0; off < len; off += page)
		v[off] = 1;
}

static void touch(char *p, size_t len, size_t page)
{
	(void)madvise(p, len, MADV_POPULATE_WRITE);
	write_pages(p, len, page);
}

/* xorshift64: deterministic for a given --seed, good enough to shuffle. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void shuffle(struct iovec *v, size_t n, unsigned seed)
{
	uint64_t s = 0x9e3779b97f4a7c15ull ^ seed;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)(next_rand(&s) % (i + 1));
		struct iovec t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
}

/* Scattered takes every other piece, so no two are adjacent and neither
 * the library nor the kernel can merge them. */
static int lay_out(struct bench_work *w, const struct bench_opts *o)
{
	size_t all = w->size / w->piece, step = o->layout == LAYOUT_SCATTERED ? 2 : 1;
	w->step = step;
	w->npieces = (all + step - 1) / step;
	w->iov = calloc(w->npieces, sizeof(*w->iov));
	if (!w->iov)
		return -ENOMEM;
	for (size_t i = 0; i < w->npieces; i++) {
		w->iov[i].iov_base = w->region + i * step * w->piece;
		w->iov[i].iov_len = w->piece;
	}
	if (o->layout == LAYOUT_RANDOM)
		shuffle(w->iov, w->npieces, o->seed);
	return 0;
}

static int map_region(struct bench_work *w, const struct bench_opts *o)
{
	void *p = mmap(NULL, w->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	w->region = p;
	if (o->thp == THP_NEVER && madvise(p, w->size, MADV_NOHUGEPAGE))
		return -errno;
	if (o->thp == THP_ALWAYS && madvise(p, w->size, MADV_HUGEPAGE))
		return -errno;
	return 0;
}

/* The raw rows need process_madvise(PIDFD_SELF) with this advice (6.15+,
 * not blocked by seccomp); try it on one touched piece. */
static bool probe_raw(struct bench_work *w)
{
	touch(w->iov[0].iov_base, w->piece, w->page);
	return bench_process_madvise(w->iov, 1, w->advice) == (long)w->piece;
}

/* A queue that holds a whole pass (+1 so the last enqueue does not trigger
 * an automatic flush: the explicit purge_flush does all the work). */
static int make_queue(struct bench_work *w, purge_queue **q, unsigned flags)
{
	struct purge_config cfg = {0};
	cfg.advice = w->advice;
	cfg.batch = PURGE_BATCH_MAX;
	cfg.capacity = (unsigned)w->npieces + 1;
	cfg.flags = flags;
	return purge_queue_create(q, &cfg);
}

static int fail(char *err, size_t errlen, int ret, const char *what, const char *why)
{
	snprintf(err, errlen, "%s: %s", what, why);
	return ret;
}

int bench_work_init(struct bench_work *w, const struct bench_opts *o, size_t page, char *err,
                    size_t errlen)
{
	memset(w, 0, sizeof(*w));
	w->size = o->size;
	w->piece = o->piece;
	w->page = page;
	w->advice = o->advice;
	w->refault = o->refault;
	int ret = map_region(w, o);
	if (ret)
		return fail(err, errlen, ret, "mapping the region", strerror(-ret));
	ret = lay_out(w, o);
	if (ret)
		return fail(err, errlen, ret, "laying out the pieces", strerror(-ret));
	w->have_raw = probe_raw(w);
	ret = make_queue(w, &w->q[ROW_NOCOAL], PURGE_NO_COALESCE);
	if (!ret)
		ret = make_queue(w, &w->q[ROW_DEFAULT], 0);
	if (ret)
		return fail(err, errlen, ret, "purge_queue_create", strerror(-ret));
	return 0;
}

void bench_work_fini(struct bench_work *w)
{
	for (int r = 0; r < ROW_KINDS; r++)
		if (w->q[r])
			purge_queue_destroy(w->q[r]);
	if (w->region)
		munmap(w->region, w->size);
	free(w->iov);
	memset(w, 0, sizeof(*w));
}

static int64_t run_row(struct bench_work *w, enum bench_row row, unsigned vlen)
{
	switch (row) {
	case ROW_LOOP:
		return bench_row_loop(w);
	case ROW_FLOOR:
		return bench_row_floor(w);
	case ROW_RAW:
		return w->have_raw ? bench_row_raw(w, vlen) : -ENOSYS;
	default:
		return bench_row_queue(w, w->q[row], vlen);
	}
}

/* What the application pays to use the purged memory again: one plain
 * write (a fault after DONTNEED) per page, pieces in address order so the
 * time does not depend on the purge order. */
static void refault(struct bench_work *w)
{
	for (size_t off = 0; off < w->size; off += w->step * w->piece)
		write_pages(w->region + off, w->piece, w->page);
}

int bench_work_pass(struct bench_work *w, enum bench_row row, unsigned vlen,
                    struct bench_sample *out)
{
	touch(w->region, w->size, w->page);
	double t0 = now_ns();
	int64_t calls = run_row(w, row, vlen);
	double t1 = now_ns();
	if (calls < 0)
		return (int)calls;
	out->ns = t1 - t0;
	out->syscalls = (uint64_t)calls;
	out->refault_ns = 0;
	if (w->refault) {
		double t2 = now_ns();
		refault(w);
		out->refault_ns = now_ns() - t2;
	}
	return 0;
}
