/* SPDX-License-Identifier: MIT */
/*
 * frames.c: with PURGE_HUGE, what a holding flush takes, one round, and
 * the frames a flush purges.  Included by drain.c and frames.c.
 */
#ifndef PURGE_FRAMES_H
#define PURGE_FRAMES_H

#include "internal.h"

#pragma GCC visibility push(hidden) /* internal, as in internal.h */

struct purge__frames_plan {
	size_t max_pieces;  /* pieces a round looks at, at most */
	uint64_t max_bytes; /* about as many bytes as a round looks at */
	uint64_t old_until; /* held pieces stamped no later than this are due (0: none) */
	uint64_t max_stamp; /* new pieces stamped later are not looked at */
};
void purge__frames_take(purge_queue *q, const struct purge__frames_plan *p, struct purge__take *t);
/* The frames a sorted selection purges whole, and the huge-backed ones it
 * purges in part, into the stats: v[0..ordered) overlap none before them
 * (SIZE_MAX: not known), the rest (bytes enqueued again) go after them. */
void purge__frames_tally(purge_queue *q, const struct iovec *v, size_t ordered, size_t n);

#pragma GCC visibility pop

#endif /* PURGE_FRAMES_H */
