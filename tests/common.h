/* SPDX-License-Identifier: MIT */
/* Helpers shared by the test suites. */
#ifndef TESTS_COMMON_H
#define TESTS_COMMON_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <stdint.h>
#include <unistd.h>

#include "purge.h"

#define PAGE      ((size_t)sysconf(_SC_PAGESIZE))
#define MAX_FAILS 4096

/* Every on_failure report, in order. */
struct failures {
	unsigned n;
	struct {
		void *addr;
		size_t len;
		int err;
	} f[MAX_FAILS];
};

static inline void record_failure(void *arg, void *addr, size_t len, int err)
{
	struct failures *fl = arg;

	cr_assert_lt(fl->n, MAX_FAILS);
	fl->f[fl->n].addr = addr;
	fl->f[fl->n].len = len;
	fl->f[fl->n].err = err;
	fl->n++;
}

/* Queue memory for the fake-kernel suites, freed by test_free_all(). */
static void *test_allocs[64];
static unsigned test_nallocs;

static inline void *test_alloc(size_t bytes)
{
	cr_assert_lt(test_nallocs, 64);
	void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
	cr_assert_not_null(p);
	return test_allocs[test_nallocs++] = p;
}

static inline void test_free_all(void)
{
	while (test_nallocs)
		free(test_allocs[--test_nallocs]);
}

/* enqueued = purged + cancelled + failed + pending, always */
static inline void assert_identity(const purge_queue *q)
{
	struct purge_stats st;

	purge_get_stats(q, &st);
	cr_assert_eq(st.enqueued_bytes,
	             st.purged_bytes + st.cancelled_bytes + st.failed_bytes + st.pending_bytes,
	             "enqueued %lu != purged %lu + cancelled %lu + failed %lu + pending %lu",
	             (unsigned long)st.enqueued_bytes, (unsigned long)st.purged_bytes,
	             (unsigned long)st.cancelled_bytes, (unsigned long)st.failed_bytes,
	             (unsigned long)st.pending_bytes);
}

static inline struct purge_stats stats_of(const purge_queue *q)
{
	struct purge_stats st;

	purge_get_stats(q, &st);
	return st;
}

#endif
