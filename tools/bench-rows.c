// SPDX-License-Identifier: MIT
/*
 * The timed part of each row: only the purge itself, nothing else.  Every
 * row checks every return value, as real code must, so the comparison
 * with the library (which checks too) is fair.
 */
#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench-work.h"

/* process_madvise is 440 in the unified syscall table (Debian 12's headers
 * already have it; older ones may not). */
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
/* The calling thread's own mm, Linux 6.15+; absent from 6.1-era headers. */
#ifndef PIDFD_SELF
#define PIDFD_SELF (-10000)
#endif

long bench_process_madvise(const struct iovec *iov, size_t n, int advice)
{
	long ret = syscall(SYS_process_madvise, PIDFD_SELF, iov, n, advice, 0u);
	return ret < 0 ? -errno : ret;
}

int64_t bench_row_loop(struct bench_work *w)
{
	for (size_t i = 0; i < w->npieces; i++)
		if (madvise(w->iov[i].iov_base, w->iov[i].iov_len, w->advice))
			return -errno;
	return (int64_t)w->npieces;
}

/* The cheapest way to purge every piece: one call over the whole region.
 * In the scattered layout this purges the gaps too (twice the bytes), but
 * it is still the bound any batching of the pieces is measured against. */
int64_t bench_row_floor(struct bench_work *w)
{
	if (madvise(w->region, w->size, w->advice))
		return -errno;
	return 1;
}

/* What an allocator would write without the library: chunks of vlen iovecs.
 * Every piece is page-aligned and mapped, so anything short is an error. */
int64_t bench_row_raw(struct bench_work *w, unsigned vlen)
{
	int64_t calls = 0;
	for (size_t i = 0; i < w->npieces; i += vlen, calls++) {
		size_t n = w->npieces - i < vlen ? w->npieces - i : vlen;
		long ret = bench_process_madvise(w->iov + i, n, w->advice);
		if (ret != (long)(n * w->piece))
			return ret < 0 ? ret : -EIO;
	}
	return calls;
}

/* Enqueue every piece, then flush: the whole cost an allocator pays.  The
 * queue holds a full pass, so the explicit flush does all the work. */
int64_t bench_row_queue(struct bench_work *w, purge_queue *q, unsigned vlen)
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
