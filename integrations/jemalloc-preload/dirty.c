/* SPDX-License-Identifier: MIT */
/*
 * A failed purge against a hand-out: how a shard's pool tags and its
 * failure sequence (fail_seq) keep a failed range from being reported zero.
 *
 * The rule of purge.h ("Reuse and zeroes"): the bytes handed out read as
 * zero when
 *  - purge_cancel on exactly them answers 0: every byte of them that was
 *    queued has been settled by a flush (purged or reported failed);
 *  - the queue's advice zeroes, and they were not written since they were
 *    queued: both are in the tag, POOL_DIRTY otherwise (MADV_FREE, a
 *    failed enqueue, a cancelled purge, a double release); an untouched
 *    fresh mapping was never queued and reads as zero anyway;
 *  - no failure overlapping them was reported since they were released:
 *    on_failure marks the pool's ranges dirty, and bumps fail_seq, which
 *    is compared across the window where the piece is in no list (from
 *    the carve to after the cancel, which settles the question: once it
 *    returns, nothing of the piece is pending, so nothing can fail).
 * No flush count is needed, which is just as well: a partial flush
 * (PURGE_INCREMENTAL, purge_flush_to) settles some ranges and not others.
 *
 * Why mark and bump sit under one pool lock, and the take reads fail_seq
 * under it too: a take is then wholly before a failure's bookkeeping or
 * wholly after it.  Before: it read the old sequence, and the bump it
 * finds after its cancel says "not zero" (the cancel waits for the flush
 * that failed, whose queue lock orders the bump before the cancel's
 * answer).  After: the range it carved was tagged dirty.  With the bump
 * outside the lock, a take between the bump and the mark found the range
 * still clean and read the new sequence, and a settled (failed) purge made
 * its cancel answer 0: zero claimed for bytes never purged (calloc handed
 * out old data).  test-pool.c forces that interleaving.
 */
#include "shim.h"

#ifdef SHIM_TEST_SEAMS
void (*shim_seam_failure)(struct shard *sh);
#define SEAM_FAILURE(sh)                                                                           \
	do {                                                                                       \
		if (shim_seam_failure)                                                             \
			shim_seam_failure(sh);                                                     \
	} while (0)
#else
#define SEAM_FAILURE(sh) ((void)0)
#endif

void shard_failed(struct shard *sh, uintptr_t s, uintptr_t e)
{
	atomic_fetch_add_explicit(&sh->ct.failures, 1, memory_order_relaxed);
	pthread_mutex_lock(&sh->pool_lock);
	pool_mark_dirty(&sh->pool, s, e);
	SEAM_FAILURE(sh);
	/* relaxed would do under the lock for the take; the load after a
	 * cancel is ordered by the queue lock */
	atomic_fetch_add(&sh->fail_seq, 1);
	pthread_mutex_unlock(&sh->pool_lock);
}

bool shard_take(struct shard *o, const struct pool_want *w, struct pool_piece *pc, uint64_t *seq,
                bool try)
{
	if (!try)
		pthread_mutex_lock(&o->pool_lock);
	else if (pthread_mutex_trylock(&o->pool_lock))
		return false;
	bool got = pool_take(&o->pool, w, pc);
	*seq = atomic_load(&o->fail_seq);
	pthread_mutex_unlock(&o->pool_lock);
	return got;
}

bool shard_zero(struct shard *o, const struct pool_piece *pc, int pending, uint64_t seq)
{
	return !pc->dirty && pending == 0 && atomic_load(&o->fail_seq) == seq;
}
