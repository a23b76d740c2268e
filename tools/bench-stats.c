// SPDX-License-Identifier: MIT
/* purge-bench statistics: percentiles of timed passes and the --suggest rule. */
#include "bench-stats.h"

#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double bench_percentile(double *v, size_t n, double q)
{
	qsort(v, n, sizeof(*v), cmp_double);
	if (q <= 0)
		return v[0];
	if (q >= 100)
		return v[n - 1];
	double rank = q / 100.0 * (double)(n - 1);
	size_t lo = (size_t)rank;
	double frac = rank - (double)lo;
	if (lo + 1 >= n)
		return v[n - 1];
	return v[lo] + frac * (v[lo + 1] - v[lo]);
}

struct bench_summary bench_summarize(double *v, size_t n)
{
	struct bench_summary s;
	s.median = bench_percentile(v, n, 50);
	s.p10 = bench_percentile(v, n, 10);
	s.p90 = bench_percentile(v, n, 90);
	return s;
}

int bench_suggest(const double *medians, size_t n)
{
	if (n == 0)
		return -1;
	double best = medians[0];
	for (size_t i = 1; i < n; i++)
		if (medians[i] < best)
			best = medians[i];
	double limit = best * (1.0 + BENCH_SUGGEST_TOLERANCE);
	for (size_t i = 0; i < n; i++)
		if (medians[i] <= limit)
			return (int)i;
	return -1; /* unreachable: the best one itself is within the limit */
}
