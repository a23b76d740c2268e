/* SPDX-License-Identifier: MIT */
/* purge-bench statistics: percentiles of timed passes and the --suggest rule. */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H

#include <stddef.h>

/* The tolerance of --suggest: a vlen is good enough within 5% of the best. */
#define BENCH_SUGGEST_TOLERANCE 0.05

/* Percentile q (0..100) of v[0..n-1], n > 0, by linear interpolation
 * between the closest ranks (rank q/100*(n-1), the common "type 7"
 * definition): p50 of {1,2,3,4} is 2.5, p10 of {10,20,30,40,50} is 14.
 * Sorts v in place. */
double bench_percentile(double *v, size_t n, double q);

struct bench_summary {
	double median, p10, p90;
};

/* Median, p10 and p90 of v[0..n-1], n > 0 (v is sorted in place). */
struct bench_summary bench_summarize(double *v, size_t n);

/* medians[i] is the libpurge-default median at the i-th vlen, vlens in
 * ascending order.  Returns the first (smallest-vlen) index whose median is
 * within BENCH_SUGGEST_TOLERANCE of the best (lowest) one, i.e.
 * median <= best * 1.05; -1 when n == 0.  Smaller batches are preferred
 * because they bound the iovec array and the time one call holds locks. */
int bench_suggest(const double *medians, size_t n);

#endif
