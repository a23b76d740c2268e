/* SPDX-License-Identifier: MIT */
/*
 * purge-bench helper threads: extra threads of the benchmark process that
 * keep running on other CPUs and touching their own memory, so the mm is
 * live there and every TLB flush of a purge has to reach them (IPIs).
 */
#ifndef BENCH_THREADS_H
#define BENCH_THREADS_H

#include <stddef.h>

struct bench_helpers;

/* Pin the calling thread to its first allowed CPU, then start `count`
 * helpers pinned round-robin to the other allowed CPUs.  Writes a line for
 * the header saying where everything runs (or why it is not pinned) into
 * note.  Returns 0 or a negative errno (nothing left running). */
int bench_helpers_start(unsigned count, struct bench_helpers **out, char *note, size_t len);

/* Stop and join the helpers; NULL is a no-op. */
void bench_helpers_stop(struct bench_helpers *h);

#endif
