/* SPDX-License-Identifier: MIT */
/*
 * What the two stall workloads (je-stall.c, mi-stall.c) share: the clock
 * in microseconds, touching every page of a block, and the percentiles of
 * a sorted sample.  Plain C; nothing here depends on an allocator.
 */
#ifndef PURGE_STALL_H
#define PURGE_STALL_H

#include <stddef.h>
#include <stdlib.h>
#include <time.h>

static inline double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Write one byte in each page of [p, p + len). */
static inline void touch_pages(char *p, size_t len, size_t page)
{
	for (size_t i = 0; i < len; i += page)
		p[i] = 1;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The q-th percentile (nearest rank) of v[0..n), sorted; 0 when n is 0. */
static inline double sorted_pct(const double *v, size_t n, double q)
{
	if (!n)
		return 0;
	return v[(size_t)(q / 100 * (double)(n - 1) + 0.5)];
}

#endif
