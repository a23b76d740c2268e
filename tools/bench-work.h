/* SPDX-License-Identifier: MIT */
/*
 * purge-bench workload: the region, the pieces in layout order, and one
 * timed pass of each row.  A pass = touch the whole region (untimed), purge
 * it the row's way (timed), optionally touch the purged pieces again (timed
 * separately as "refault").
 */
#ifndef BENCH_WORK_H
#define BENCH_WORK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "bench-opts.h"
#include "purge.h"

enum bench_row {
	ROW_LOOP,    /* one madvise() per piece */
	ROW_FLOOR,   /* one madvise() over the whole region */
	ROW_RAW,     /* process_madvise(PIDFD_SELF) over vlen-iovec chunks, no library */
	ROW_NOCOAL,  /* libpurge, PURGE_NO_COALESCE, batch = vlen */
	ROW_DEFAULT, /* libpurge defaults (coalescing on), batch = vlen */
	ROW_KINDS
};

struct bench_work {
	char *region;
	size_t size, piece, page;
	struct iovec *iov; /* the pieces, in the order the layout purges them */
	size_t npieces;
	size_t step; /* pieces are every step-th piece of the region: 1, or 2 when scattered */
	int advice;
	bool refault;
	bool have_raw;             /* process_madvise(PIDFD_SELF) works for this advice */
	purge_queue *q[ROW_KINDS]; /* for ROW_NOCOAL and ROW_DEFAULT */
};

/* One timed pass of one row. */
struct bench_sample {
	double ns;         /* the purge */
	double refault_ns; /* touching the purged pieces again (0 without --refault) */
	uint64_t syscalls; /* made by the purge */
};

/* Map and pre-fault the region, lay out the pieces, create the queues.
 * Returns 0 or a negative errno with a reason in err. */
int bench_work_init(struct bench_work *w, const struct bench_opts *o, size_t page, char *err,
                    size_t errlen);
void bench_work_fini(struct bench_work *w);

/* One pass of `row` (vlen ignored by ROW_LOOP and ROW_FLOOR).  Returns 0,
 * or a negative errno when a purge failed (a broken measurement). */
int bench_work_pass(struct bench_work *w, enum bench_row row, unsigned vlen,
                    struct bench_sample *out);

/* The timed purges, one per row (bench-rows.c).  Each returns the system
 * calls it made, or a negative errno. */
int64_t bench_row_loop(struct bench_work *w);
int64_t bench_row_floor(struct bench_work *w);
int64_t bench_row_raw(struct bench_work *w, unsigned vlen);
int64_t bench_row_queue(struct bench_work *w, purge_queue *q, unsigned vlen);

/* Raw process_madvise(PIDFD_SELF, ...): bytes advised or -errno. */
long bench_process_madvise(const struct iovec *iov, size_t n, int advice);

#endif
