/* SPDX-License-Identifier: MIT */
/*
 * The one clock of the measuring programs: purge-bench, queue-bench,
 * stall-bench (bench/) and the workloads (integrations/workloads/workload.h).
 * CLOCK_MONOTONIC in nanoseconds; header-only, nothing to link.
 */
#ifndef PURGE_BENCH_CLOCK_H
#define PURGE_BENCH_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
