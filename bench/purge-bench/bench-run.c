// SPDX-License-Identifier: MIT
/*
 * purge-bench measurement.  A pass of a row: touch the whole region
 * (untimed), purge the pieces the row's way (timed), optionally write the
 * purged pieces again (timed apart as "refault").  Every row checks every
 * return value, as real code must, so the comparison with the library is fair.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "bench.h"
#include "purge.h"
#include "syscall.h" /* src/: process_madvise(PIDFD_SELF) as the library calls it */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

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
	if (bench_thp_advised(o)) {
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
	/* one call per batch, as the kernel-floor rows make: the 16 MiB default
	 * would cut batches of large pieces into more calls than they time */
	cfg.max_call_bytes = SIZE_MAX;
	cfg.flags = flags;
	cfg.mode = w->o->mode;
	return purge_queue_create(q, &cfg);
}

int bench_work_init(struct bench_work *w, const struct bench_opts *o,
                    const struct bench_memsrc *mem, char *err, size_t errlen)
{
	memset(w, 0, sizeof(*w));
	w->o = o;
	w->mem = mem;
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

/* Pieces [from, to) of a pass, one madvise() each. */
static int64_t row_loop(struct bench_work *w, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		int ret = purge__sys_madvise(w->iov[i].iov_base, w->iov[i].iov_len, w->o->advice);
		if (ret)
			return ret;
	}
	return (int64_t)(to - from);
}

/* What an allocator would write without the library: chunks of vlen iovecs.
 * Every piece is mapped and page-aligned, so anything short is an error. */
static int64_t row_raw(struct bench_work *w, unsigned vlen, size_t from, size_t to)
{
	int64_t calls = 0;
	for (size_t i = from; i < to; i += vlen, calls++) {
		size_t n = to - i < vlen ? to - i : vlen;
		ssize_t ret = purge__sys_process_madvise(w->iov + i, n, w->o->advice);
		if (ret != (ssize_t)(n * w->o->piece))
			return ret < 0 ? ret : -EIO;
	}
	return calls;
}

/* Enqueue pieces [from, to), and flush at the end of the pass: the whole
 * cost an allocator pays.  Its system calls are counted from its stats. */
static int64_t row_queue(struct bench_work *w, purge_queue *q, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		int ret = purge_enqueue(q, w->iov[i].iov_base, w->iov[i].iov_len);
		if (ret)
			return ret;
	}
	int failed = to < w->npieces ? 0 : purge_flush(q);
	return failed <= 0 ? failed : -EIO;
}

/* Pieces [from, to) the row's way: the system calls made (0 for the queue
 * rows), or a negative errno. */
static int64_t run_part(struct bench_work *w, const struct bench_result *x, size_t from, size_t to)
{
	switch (x->kind) {
	case ROW_LOOP:
		return row_loop(w, from, to);
	case ROW_FLOOR: { /* one call at the end; in the scattered layout the gaps too */
		if (to < w->npieces)
			return 0;
		int ret = purge__sys_madvise(w->region, w->o->size, w->o->advice);
		return ret ? ret : 1;
	}
	case ROW_RAW:
		return row_raw(w, x->vlen, from, to);
	default:
		return row_queue(w, w->q[x->kind], from, to);
	}
}

static purge_queue *queue_of(const struct bench_work *w, enum bench_row kind)
{
	return kind >= ROW_NOCOAL ? w->q[kind] : NULL;
}

/* One pass: its time so far and system calls, and what it saw at the
 * start, half-way and the end (0, 1, 2). */
struct pass_ctx {
	double ns;
	int64_t calls;
	struct purge_stats st[3];
	struct {
		double split, usage, huge;
	} at[3];
};

static int timed(struct bench_work *w, const struct bench_result *x, size_t from, size_t to,
                 struct pass_ctx *c)
{
	double t0 = now_ns();
	int64_t n = run_part(w, x, from, to);
	c->ns += now_ns() - t0;
	if (n < 0)
		return (int)n;
	c->calls += n;
	return 0;
}

/* The queue's stats and the memory facts at point i, untimed; AnonHugePages
 * at the start and end only (smaps_rollup walks all the page tables). */
static void snap(struct bench_work *w, const struct bench_result *x, struct pass_ctx *c, int i)
{
	uint64_t v;
	purge_queue *q = queue_of(w, x->kind);
	if (q)
		purge_get_stats(q, &c->st[i]);
	if (!x->mem)
		return;
	c->at[i].split = bench_read_key("/proc/vmstat", "thp_split_pmd", &v) ? NAN : (double)v;
	c->at[i].usage = bench_memsrc_read(w->mem, w->page, &v) ? NAN : (double)v;
	c->at[i].huge = i == 1 || bench_read_key("/proc/self/smaps_rollup", "AnonHugePages:", &v)
	                    ? NAN
	                    : (double)v * 1024;
}

/* Bytes purged by half-way: the library's count for its rows; every piece
 * so far for the others, as a failure would have ended the pass. */
static double purged_by_half(const struct bench_work *w, const struct bench_result *x,
                             const struct pass_ctx *c, size_t half)
{
	if (queue_of(w, x->kind))
		return (double)(c->st[1].purged_bytes - c->st[0].purged_bytes);
	return x->kind == ROW_FLOOR ? 0 : (double)(half * w->o->piece);
}

/* The library's frame counters: only a PURGE_HUGE queue plans by frames
 * and counts them (and purge-huge runs only where the library took it). */
static void record_frames(const struct bench_work *w, struct bench_result *x, double *m,
                          const struct pass_ctx *c)
{
	unsigned n = w->o->repeat;
	struct bench_frames f0 = bench_frames_of(&c->st[0]), f1 = bench_frames_of(&c->st[1]),
	                    f2 = bench_frames_of(&c->st[2]);
	bool known = x->kind == ROW_HUGE;
	m[MF_FRAMES_WHOLE * n] = known ? (double)(f2.whole - f0.whole) : NAN;
	m[MF_FRAMES_SPLIT * n] = known ? (double)(f2.split - f0.split) : NAN;
	m[MF_HELD_HALF * n] = known ? (double)f1.held_bytes : NAN;
}

/* Pass r's memory facts into x->mem ([field][pass]). */
static void record_mem(const struct bench_work *w, struct bench_result *x, unsigned r,
                       const struct pass_ctx *c, size_t half)
{
	unsigned n = w->o->repeat;
	double *m = x->mem + r, purged = purged_by_half(w, x, c, half);
	double drop = c->at[0].usage - c->at[1].usage;
	m[MF_SPLIT_HALF * n] = c->at[1].split - c->at[0].split;
	m[MF_SPLIT_END * n] = c->at[2].split - c->at[0].split;
	m[MF_PURGED_HALF * n] = purged;
	m[MF_DROP_HALF * n] = drop;
	m[MF_LEFT_HALF * n] = purged > 0 ? drop / purged : NAN;
	m[MF_DROP_END * n] = c->at[0].usage - c->at[2].usage;
	m[MF_HUGE_BEFORE * n] = c->at[0].huge;
	m[MF_HUGE_AFTER * n] = c->at[2].huge;
	record_frames(w, x, m, c);
}

/* Write the purged pieces again, in address order: the time must not
 * depend on the row. */
static void refault(struct bench_work *w, struct bench_result *x, unsigned r)
{
	double t0 = now_ns();
	for (size_t off = 0; off < w->o->size; off += w->step * w->o->piece)
		write_pages(w->region + off, w->o->piece, w->page);
	x->refault_ns[r] = now_ns() - t0;
}

/* One timed pass of row x into sample r: in two halves when it measures
 * memory, the snapshot between them untimed.  0 or a negative errno. */
static int pass(struct bench_work *w, struct bench_result *x, unsigned r)
{
	struct pass_ctx c = {0};
	purge_queue *q = queue_of(w, x->kind);
	size_t half = x->mem ? w->npieces / 2 : w->npieces;
	int ret = prepare(w);
	if (!ret && q && purge_set_batch(q, x->vlen))
		ret = -EINVAL;
	if (ret)
		return ret;
	snap(w, x, &c, 0);
	ret = timed(w, x, 0, half, &c);
	if (!ret && half < w->npieces) {
		snap(w, x, &c, 1);
		ret = timed(w, x, half, w->npieces, &c);
	}
	x->ns[r] = c.ns;
	if (ret)
		return ret;
	snap(w, x, &c, 2);
	x->syscalls =
	    q ? c.st[2].pmadv_calls + c.st[2].madv_calls - c.st[0].pmadv_calls - c.st[0].madv_calls
	      : (uint64_t)c.calls;
	if (x->mem)
		record_mem(w, x, r, &c, half);
	if (w->o->refault)
		refault(w, x, r);
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
	if (bench_mem_measured(o))
		res->mem_samples = calloc(max * MF_FIELDS * o->repeat, sizeof(double));
	if (!res->rows || !res->samples || (bench_mem_measured(o) && !res->mem_samples))
		return -ENOMEM;
	for (unsigned v = 0; v <= o->nvlens; v++)
		for (int k = v ? ROW_RAW : ROW_LOOP; k <= (v ? ROW_HUGE : ROW_FLOOR); k++) {
			struct bench_result *x = &res->rows[res->nrows];
			if (!(kinds & 1u << k))
				continue;
			x->kind = (enum bench_row)k;
			x->vlen = v ? o->vlens[v - 1] : 0;
			x->skipped = skip_reason(w, k);
			x->ns = res->samples + 2 * res->nrows * o->repeat;
			x->refault_ns = x->ns + o->repeat;
			if (res->mem_samples)
				x->mem = res->mem_samples + res->nrows * MF_FIELDS * o->repeat;
			res->nrows++;
		}
	return 0;
}

void bench_results_free(struct bench_results *res)
{
	free(res->rows);
	free(res->samples);
	free(res->mem_samples);
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
	for (size_t i = 0; !ret && i < res->nrows; i++)
		bench_summarize_row(&res->rows[i], res->repeat);
	return ret;
}
