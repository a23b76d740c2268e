// SPDX-License-Identifier: MIT
/*
 * purge-bench measurement.  A pass of a row: touch the whole region
 * (untimed), purge the pieces the row's way (timed), optionally write the
 * purged pieces again (timed apart as "refault").  Every row checks every
 * return value, as real code must, so the comparison with the library is fair.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "purge.h"
#include "syscall.h" /* src/: process_madvise(PIDFD_SELF) as the library calls it */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void write_pages(char *p, size_t len, size_t page)
{
	volatile char *v = p;
	for (size_t off = 0; off < len; off += page)
		v[off] = 1;
}

/* Every page present and dirty, which is what a purge must find: populate
 * faults the missing pages in one call; the writes re-dirty pages that
 * MADV_FREE left present but clean, and do it all where populate is unknown. */
static void touch(char *p, size_t len, size_t page)
{
	(void)madvise(p, len, MADV_POPULATE_WRITE);
	write_pages(p, len, page);
}

static bool thp_advised(const struct bench_opts *o)
{
	return o->thp == THP_ALWAYS || o->thp == THP_MADVISE;
}

static int advise_thp(struct bench_work *w)
{
	const struct bench_opts *o = w->o;
	if (o->thp == THP_SYSTEM)
		return 0;
	return madvise(w->region, o->size, o->thp == THP_NEVER ? MADV_NOHUGEPAGE : MADV_HUGEPAGE)
	           ? -errno
	           : 0;
}

/* What a pass purges: the whole region present and dirty.  A purge of part
 * of a huge page splits it, and its pages refault as small ones: so with
 * huge pages advised each pass maps the region afresh at the same address
 * (MAP_FIXED drops the old mapping and its page tables), for huge pages to
 * back it again. */
static int prepare(struct bench_work *w)
{
	const struct bench_opts *o = w->o;
	if (thp_advised(o)) {
		if (mmap(w->region, o->size, PROT_READ | PROT_WRITE,
		         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			return -errno;
		int ret = advise_thp(w);
		if (ret)
			return ret;
	}
	touch(w->region, o->size, w->page);
	return 0;
}

/* The region on a huge page frame boundary, so that whole frames can be
 * huge pages: mapped with a frame to spare, the ends cut off. */
static char *map_aligned(size_t size, size_t frame)
{
	char *p =
	    mmap(NULL, size + frame, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	char *a = (char *)(((uintptr_t)p + frame - 1) & ~((uintptr_t)frame - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	munmap(a + size, (size_t)(p + frame - a)); /* at least a page: a - p < frame */
	return a;
}

/* Map the region and list the pieces in the order the layout purges them. */
static int lay_out(struct bench_work *w, const struct bench_opts *o)
{
	uint64_t rs = bench_rand_seed(o->seed);
	if (!(w->region = map_aligned(o->size, o->frame)))
		return -errno;
	int ret = advise_thp(w);
	if (ret)
		return ret;
	w->step = o->layout == LAYOUT_SCATTERED ? 2 : 1;
	w->npieces = (o->size / o->piece + w->step - 1) / w->step;
	if (!(w->iov = calloc(w->npieces, sizeof(*w->iov))))
		return -ENOMEM;
	if (o->layout == LAYOUT_FRAMES)
		return bench_order_frames(w->iov, w->region, o, &rs);
	for (size_t i = 0; i < w->npieces; i++) {
		w->iov[i].iov_base = w->region + i * w->step * o->piece;
		w->iov[i].iov_len = o->piece;
	}
	if (o->layout == LAYOUT_RANDOM)
		bench_shuffle(w->iov, w->npieces, &rs);
	return 0;
}

/* A queue that holds a whole pass (+1: the last enqueue must not flush);
 * in the frames layout it flushes automatically above --max-pending. */
static int make_queue(struct bench_work *w, unsigned flags, purge_queue **q)
{
	struct purge_config cfg = {0};
	cfg.advice = w->o->advice;
	cfg.batch = PURGE_BATCH_MAX;
	cfg.capacity = (unsigned)w->npieces + 1;
	cfg.max_pending_bytes = w->o->max_pending;
	cfg.flags = flags;
	cfg.mode = w->o->mode;
	return purge_queue_create(q, &cfg);
}

int bench_work_init(struct bench_work *w, const struct bench_opts *o, char *err, size_t errlen)
{
	memset(w, 0, sizeof(*w));
	w->o = o;
	w->page = (size_t)sysconf(_SC_PAGESIZE);
	int ret = lay_out(w, o);
	if (ret) {
		snprintf(err, errlen, "setting up the region: %s", strerror(-ret));
		return ret;
	}
	/* the raw rows need process_madvise(PIDFD_SELF) with this advice (6.15+) */
	touch(w->iov[0].iov_base, o->piece, w->page);
	w->have_raw = purge__sys_process_madvise(w->iov, 1, o->advice) == (ssize_t)o->piece;
	if (o->mode == PURGE_MODE_VECTORED && !w->have_raw) {
		snprintf(err, errlen, "--mode vectored: process_madvise(PIDFD_SELF) is refused");
		return -ENOSYS;
	}
	ret = make_queue(w, PURGE_NO_COALESCE, &w->q[ROW_NOCOAL]);
	if (!ret)
		ret = make_queue(w, 0, &w->q[ROW_DEFAULT]);
	/* the same config took 0 without the flag: -EINVAL is the flag's */
	if (!ret && (ret = make_queue(w, PURGE_HUGE, &w->q[ROW_HUGE])) == -EINVAL)
		ret = 0;
	if (ret)
		snprintf(err, errlen, "purge_queue_create: %s", strerror(-ret));
	return ret;
}

void bench_work_fini(struct bench_work *w)
{
	for (int r = 0; r < ROW_KINDS; r++)
		if (w->q[r])
			purge_queue_destroy(w->q[r]);
	if (w->region)
		munmap(w->region, w->o->size);
	free(w->iov);
}

static int64_t row_loop(struct bench_work *w)
{
	for (size_t i = 0; i < w->npieces; i++) {
		int ret = purge__sys_madvise(w->iov[i].iov_base, w->iov[i].iov_len, w->o->advice);
		if (ret)
			return ret;
	}
	return (int64_t)w->npieces;
}

/* What an allocator would write without the library: chunks of vlen iovecs.
 * Every piece is mapped and page-aligned, so anything short is an error. */
static int64_t row_raw(struct bench_work *w, unsigned vlen)
{
	int64_t calls = 0;
	for (size_t i = 0; i < w->npieces; i += vlen, calls++) {
		size_t n = w->npieces - i < vlen ? w->npieces - i : vlen;
		ssize_t ret = purge__sys_process_madvise(w->iov + i, n, w->o->advice);
		if (ret != (ssize_t)(n * w->o->piece))
			return ret < 0 ? ret : -EIO;
	}
	return calls;
}

/* Enqueue every piece, then flush: the whole cost an allocator pays. */
static int64_t row_queue(struct bench_work *w, purge_queue *q, unsigned vlen)
{
	struct purge_stats before, after;
	if (purge_set_batch(q, vlen))
		return -EINVAL;
	purge_get_stats(q, &before);
	for (size_t i = 0; i < w->npieces; i++) {
		int ret = purge_enqueue(q, w->iov[i].iov_base, w->iov[i].iov_len);
		if (ret)
			return ret;
	}
	int failed = purge_flush(q);
	purge_get_stats(q, &after);
	if (failed)
		return failed < 0 ? failed : -EIO;
	return (int64_t)(after.pmadv_calls + after.madv_calls - before.pmadv_calls -
	                 before.madv_calls);
}

static int64_t run_row(struct bench_work *w, enum bench_row row, unsigned vlen)
{
	switch (row) {
	case ROW_LOOP:
		return row_loop(w);
	case ROW_FLOOR: { /* in the scattered layout this purges the gaps too */
		int ret = purge__sys_madvise(w->region, w->o->size, w->o->advice);
		return ret ? ret : 1;
	}
	case ROW_RAW:
		return row_raw(w, vlen);
	default:
		return row_queue(w, w->q[row], vlen);
	}
}

/* One timed pass of row x into sample r.  0 or a negative errno. */
static int pass(struct bench_work *w, struct bench_result *x, unsigned r)
{
	int ret = prepare(w);
	if (ret)
		return ret;
	double t0 = now_ns();
	int64_t calls = run_row(w, x->kind, x->vlen);
	x->ns[r] = now_ns() - t0;
	if (calls < 0)
		return (int)calls;
	x->syscalls = (uint64_t)calls;
	if (w->o->refault) { /* pieces in address order: the time must not depend on the row */
		t0 = now_ns();
		for (size_t off = 0; off < w->o->size; off += w->step * w->o->piece)
			write_pages(w->region + off, w->o->piece, w->page);
		x->refault_ns[r] = now_ns() - t0;
	}
	return 0;
}

/* Why row k cannot run here; NULL when it can. */
static const char *skip_reason(const struct bench_work *w, int k)
{
	if (k == ROW_RAW && !w->have_raw)
		return "process_madvise(PIDFD_SELF) refused for this advice";
	if (k == ROW_HUGE && !w->q[ROW_HUGE])
		return "the library lacks PURGE_HUGE";
	return NULL;
}

/* Loop and floor first (no vlen), then raw, nocoal, default, huge at each
 * vlen, for the kinds in the mask; the samples of every row in one block. */
static int alloc_rows(struct bench_results *res, const struct bench_work *w, unsigned kinds)
{
	const struct bench_opts *o = w->o;
	size_t max = 2 + 4 * (size_t)o->nvlens;
	res->repeat = o->repeat;
	res->rows = calloc(max, sizeof(*res->rows));
	res->samples = calloc(2 * max * o->repeat, sizeof(double));
	if (!res->rows || !res->samples)
		return -ENOMEM;
	for (unsigned v = 0; v <= o->nvlens; v++)
		for (int k = v ? ROW_RAW : ROW_LOOP; k <= (v ? ROW_HUGE : ROW_FLOOR); k++) {
			struct bench_result *x = &res->rows[res->nrows];
			if (!(kinds & 1u << k))
				continue;
			x->kind = (enum bench_row)k;
			x->vlen = v ? o->vlens[v - 1] : 0;
			x->skipped = skip_reason(w, k);
			x->ns = res->samples + 2 * res->nrows++ * o->repeat;
			x->refault_ns = x->ns + o->repeat;
		}
	return 0;
}

void bench_results_free(struct bench_results *res)
{
	free(res->rows);
	free(res->samples);
	memset(res, 0, sizeof(*res));
}

/* Pass r runs every row once before pass r+1 starts, so slow drift hits all
 * rows alike; odd passes run backwards, so that no row always follows the
 * same neighbour (a row's time can depend on the state the last one left). */
static int sweep(struct bench_work *w, struct bench_results *res, char *err, size_t errlen)
{
	double start = now_ns();
	for (unsigned r = 0; r < res->repeat; r++) {
		for (size_t j = 0; j < res->nrows; j++) {
			struct bench_result *x = &res->rows[r % 2 ? res->nrows - 1 - j : j];
			int ret = x->skipped ? 0 : pass(w, x, r);
			if (ret) {
				snprintf(err, errlen, "%s at vlen %u failed: %s",
				         bench_rows[x->kind], x->vlen, strerror(-ret));
				return ret;
			}
		}
		res->wall_s = (now_ns() - start) / 1e9;
		if (res->wall_s > 1) /* quiet for short runs */
			fprintf(stderr, "purge-bench: pass %u/%u done, %.1f s\n", r + 1,
			        res->repeat, res->wall_s);
	}
	return 0;
}

int bench_sweep(struct bench_work *w, const struct bench_opts *o, unsigned kinds,
                struct bench_results *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof(*res));
	res->pages = w->npieces * (o->piece / w->page);
	if (alloc_rows(res, w, kinds)) {
		snprintf(err, errlen, "out of memory for the results");
		return -ENOMEM;
	}
	int ret = sweep(w, res, err, errlen);
	for (size_t i = 0; !ret && i < res->nrows; i++) {
		struct bench_result *x = &res->rows[i];
		x->time = bench_summarize(x->ns, res->repeat);
		x->refault = bench_summarize(x->refault_ns, res->repeat);
	}
	return ret;
}
