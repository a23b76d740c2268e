/* SPDX-License-Identifier: MIT */
/*
 * A failed purge against a hand-out: how a shard's pool tags and its
 * failure sequence (fail_seq) keep a failed range from being reported zero.
 * The rule itself is in hooks.c, above from_pool().
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
	atomic_fetch_add(&sh->fail_seq, 1);
	atomic_fetch_add_explicit(&sh->ct.failures, 1, memory_order_relaxed);
	SEAM_FAILURE(sh);
	pthread_mutex_lock(&sh->pool_lock);
	pool_mark_dirty(&sh->pool, s, e);
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
