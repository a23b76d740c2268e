/* SPDX-License-Identifier: MIT */
/*
 * purge-bench sweep: every row at every vlen, interleaved pass by pass
 * (pass r runs every row once before pass r+1 starts, odd passes in reverse
 * order), so slow drift (frequency, host noise, memory state) hits all
 * rows alike.
 */
#ifndef BENCH_SWEEP_H
#define BENCH_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench-stats.h"
#include "bench-work.h"

struct bench_result {
	enum bench_row kind;
	unsigned vlen;      /* 0 for rows that do not depend on it (loop, floor) */
	bool skipped;       /* raw rows when process_madvise(PIDFD_SELF) is refused */
	double *ns;         /* [repeat] purge time per pass */
	double *refault_ns; /* [repeat] */
	uint64_t syscalls;  /* per pass */
	struct bench_summary time, refault;
};

struct bench_results {
	struct bench_result *rows; /* loop, floor, then raw/nocoal/default per vlen */
	size_t nrows;
	unsigned repeat;
	size_t pages;  /* pages in the purged pieces: the ns/page denominator */
	double wall_s; /* the whole sweep, untimed touches included */
};

enum { BENCH_REF_LOOP = 0, BENCH_REF_FLOOR = 1 }; /* row indexes */

/* Run the sweep and summarise it.  Returns 0 or a negative errno with a
 * reason in err (a purge failed: the numbers would be meaningless). */
int bench_sweep(struct bench_work *w, const struct bench_opts *o, struct bench_results *res,
                char *err, size_t errlen);
void bench_results_free(struct bench_results *res);

const char *bench_row_name(enum bench_row kind);

#endif
