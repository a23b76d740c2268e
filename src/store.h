/* SPDX-License-Identifier: MIT */
/*
 * The pending store: the ranges waiting for a flush, in age order and, once
 * a queue cancels, in address order.  Pure bookkeeping: no system call, no
 * counter of the books, never calls the flush.  store.c has the code.
 *
 * A queue pays for what it uses.  A store starts plain: its ranges are the
 * slots [head, bump) of one array of iovecs, in enqueue order, which a
 * flush can sort in place and hand to the kernel as they are.  The first
 * cancel that reaches pending memory links it: each piece joins a doubly
 * linked age list (a part split off by a cancel goes right after the piece
 * it came from, so the list stays in age order with no heap and no stale
 * reference), and the address index (index.h) is built in bulk.  A store
 * that empties starts plain again.  Enqueue times are written only once
 * the queue keeps ages (store_age()); until then the time the store last
 * became non-empty stands for all of them, never later than the truth.
 *
 * Costs, n pending pieces:
 *   add          O(1);
 *   cancel       O(log n) for each piece it touches, after indexing what
 *                was added since the last cancel (O(log n) each, or O(n)
 *                in bulk when that is most of the store);
 *   take oldest  O(1) a piece when plain, O(log n) when linked;
 *   take all     O(n).
 */
#ifndef PURGE_STORE_H
#define PURGE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "index.h"

#pragma GCC visibility push(hidden) /* internal, as in internal.h */

#define PURGE_STORE_NONE UINT32_MAX
#define PURGE_OVL_MAX    32 /* overlapping enqueues kept before they are settled */

/* Age list links of a piece; free pieces chain through next. */
struct purge__link {
	uint32_t prev, next;
	uint32_t info; /* where a linked piece is, and its marks (store.c) */
};

struct purge__store {
	struct iovec *rng;        /* [npieces]: start (iov_base) and length */
	struct purge__link *link; /* [npieces]: linked stores only */
	uint64_t *stamp;          /* [npieces]: coarse ns of enqueue, aged stores only */
	uint32_t *ovl;            /* [npieces]: pieces that overlap indexed ones */
	void *scratch;            /* npieces + 1 iovecs: takes and bulk indexing */
	struct purge__index idx;  /* address order, linked stores only */
	uint32_t npieces;         /* pool size */
	uint32_t bump;       /* plain: the slot after the last piece; linked: next fresh slot */
	uint32_t head, tail; /* plain: first slot; linked: oldest, newest piece */
	uint32_t free;       /* linked: free list */
	uint32_t nfresh;     /* linked: slots from bump on never used since linking */
	uint32_t live;       /* pending pieces */
	uint32_t unsynced, nunsynced; /* linked: first piece not indexed yet, count */
	uint32_t fresh;               /* linked: first piece no frame plan has seen (a suffix) */
	uint32_t nheld;               /* pieces a frame plan holds, and their bytes */
	uint64_t held_bytes;
	uint32_t novl;
	uint64_t splits; /* pieces a cancel has split in two, ever */
	bool linked;
	bool aged;        /* stamps are written */
	uint64_t epoch;   /* coarse ns when the store last became non-empty */
	uint64_t newest;  /* the last stamp given: keeps stamps in list order */
	uintptr_t lo, hi; /* bounds of everything pending (conservative) */
};

void purge__store_init(struct purge__store *s, uint32_t npieces, struct iovec *rng,
                       struct purge__link *link, uint64_t *stamp, uint32_t *ovl,
                       struct purge__node *nodes, uint32_t nnodes, void *scratch);

static inline uint32_t purge__store_live(const struct purge__store *s)
{
	return s->live;
}

/* How many pieces cancels have split in two since the store was made. */
static inline uint64_t purge__store_splits(const struct purge__store *s)
{
	return s->splits;
}

static inline uint32_t purge__store_room(const struct purge__store *s)
{
	return s->npieces - s->live;
}

/* Does the next add need the time (aged, or the store is empty)? */
static inline bool purge__store_wants_time(const struct purge__store *s)
{
	return s->aged || s->live == 0;
}

__attribute__((cold)) void purge__store_add_slow(struct purge__store *s, uintptr_t start,
                                                 uintptr_t end, uint64_t now);

/* Stamp piece id at coarse time now, kept in list order even if a clock
 * steps back. */
static inline void purge__store_stamp(struct purge__store *s, uint32_t id, uint64_t now)
{
	s->newest = now > s->newest ? now : s->newest;
	s->stamp[id] = s->newest;
}

/* The add of a plain store with room at the end of its array, stamped at
 * coarse time now if the store is aged: true when done, false when
 * purge__store_add_slow must do it. */
static inline bool purge__store_add_plain(struct purge__store *s, uintptr_t start, uintptr_t end,
                                          uint64_t now)
{
	if (s->linked || s->live == 0 || s->bump == s->npieces)
		return false;
	uint32_t id = s->bump++;
	s->rng[id].iov_base = (void *)start;
	s->rng[id].iov_len = end - start;
	if (s->aged)
		purge__store_stamp(s, id, now);
	s->live++;
	s->lo = start < s->lo ? start : s->lo;
	s->hi = end > s->hi ? end : s->hi;
	return true;
}

/* A pending range [start, end); the caller made room.  `now` is the coarse
 * time when purge__store_wants_time() said so, else ignored. */
static inline void purge__store_add(struct purge__store *s, uintptr_t start, uintptr_t end,
                                    uint64_t now)
{
	if (!purge__store_add_plain(s, start, end, now))
		purge__store_add_slow(s, start, end, now);
}

/* A part of a range a flush took, pending again (a cancel split it while
 * the flight had no spare slot): stamped `stamp`, placed in the age list
 * ahead of every piece no older (a flush that takes the oldest takes it
 * first), indexed at once; links the store.  The caller made room.
 * O(log n), plus the pieces older than it that it walks past. */
void purge__store_put_back(struct purge__store *s, uintptr_t start, uintptr_t end, uint64_t stamp);
/* From now on, write stamps; pending pieces get the epoch. */
void purge__store_age(struct purge__store *s);

/* Coarse ns at which the oldest pending piece was enqueued (the epoch for
 * a store without stamps); 0 when nothing is pending. */
uint64_t purge__store_oldest(const struct purge__store *s);

/* What a cancel (or a removal for a flush) removed. */
struct purge__cut {
	size_t bytes;       /* pending bytes removed */
	uint32_t gone;      /* pieces removed */
	uint32_t split;     /* pieces added by splits */
	struct iovec *sink; /* NULL, or where each removed part goes (removals) */
	size_t nsink, cap;
};

/* Removes every pending byte of [start, end) and returns 0; or, when its
 * splits need more free pieces than the pool has, changes nothing and
 * returns how many it needs (the caller settles the oldest, then asks
 * again). */
uint32_t purge__store_cancel(struct purge__store *s, uintptr_t start, uintptr_t end,
                             struct purge__cut *out);

/* The same for a flush: the removed parts go to out->sink (room for what
 * purge__store_cover counts), out's counts add up. */
uint32_t purge__store_remove(struct purge__store *s, uintptr_t start, uintptr_t end,
                             struct purge__cut *out);

/*
 * For the frame plan (frames.c), on a linked, indexed store.  Pieces are
 * slots of rng; the age list runs head -> next.  Every piece before
 * `fresh` is held: a plan saw it.  From fresh on are the pieces no plan
 * has seen, and the few a plan held ahead of their turn (they lay inside
 * a range it saw: a range enqueued over pending bytes).
 */
void purge__store_link(struct purge__store *s); /* linked and fully indexed */
/* Holds the pending pieces that lie inside [a, b). */
void purge__store_hold_in(struct purge__store *s, uintptr_t a, uintptr_t b);
/* The pieces from id on (NONE: none) are new to the plans. */
void purge__store_set_fresh(struct purge__store *s, uint32_t id);
/* The first piece from id on (age order) that is not held; NONE: none. */
uint32_t purge__store_first_unheld(const struct purge__store *s, uint32_t id);
/* Pending bytes of [a, b) (bytes pending twice count once: a lower bound,
 * not 0 when any is, if more than 64 overlapping pieces meet it), and in
 * *pieces how many parts a removal of it may put in a sink. */
uint64_t purge__store_cover(struct purge__store *s, uintptr_t a, uintptr_t b, uint32_t *pieces);

static inline uint32_t purge__store_next(const struct purge__store *s, uint32_t id)
{
	return s->link[id].next;
}

static inline uintptr_t purge__store_start(const struct purge__store *s, uint32_t id)
{
	return (uintptr_t)s->rng[id].iov_base;
}

static inline uintptr_t purge__store_end(const struct purge__store *s, uint32_t id)
{
	return (uintptr_t)s->rng[id].iov_base + s->rng[id].iov_len;
}

static inline size_t purge__store_len(const struct purge__store *s, uint32_t id)
{
	return s->rng[id].iov_len;
}

/* Where the age order starts: the oldest piece (linked; NONE: none), or
 * the first slot (plain). */
static inline uint32_t purge__store_first(const struct purge__store *s)
{
	return s->head;
}

/* Linked: the first piece no frame plan has seen; NONE: none. */
static inline uint32_t purge__store_fresh(const struct purge__store *s)
{
	return s->fresh;
}

/* The same, linked or plain (a plain store's pieces are all new to the
 * plans). */
static inline uint32_t purge__store_first_new(const struct purge__store *s)
{
	return s->linked ? s->fresh : s->head;
}

/* Are stamps written (purge__store_age)? */
static inline bool purge__store_aged(const struct purge__store *s)
{
	return s->aged;
}

/* Coarse ns at which piece id was enqueued: aged stores only. */
static inline uint64_t purge__store_stamp_of(const struct purge__store *s, uint32_t id)
{
	return s->stamp[id];
}

/* Pieces on the overlap list: enqueued over pending bytes. */
static inline uint32_t purge__store_overlapping(const struct purge__store *s)
{
	return s->novl;
}

/* Pieces a frame plan holds, and their bytes. */
static inline uint32_t purge__store_held(const struct purge__store *s)
{
	return s->nheld;
}

static inline uint64_t purge__store_held_bytes(const struct purge__store *s)
{
	return s->held_bytes;
}

/* The scratch, purge__store_scratch_len() iovecs, free between takes. */
static inline struct iovec *purge__store_scratch(const struct purge__store *s)
{
	return s->scratch;
}

static inline size_t purge__store_scratch_len(const struct purge__store *s)
{
	return (size_t)s->npieces + 1;
}

/*
 * Taking pieces out for a flush.  A take hands back an array of iovecs,
 * valid until the store next changes, with as much scratch beside it for
 * sorting; the pieces are out of the store.
 */
struct purge__take {
	struct iovec *v; /* the pieces taken */
	size_t n;
	struct iovec *tmp; /* n iovecs of scratch, disjoint from v; NULL if not asked */
	bool sorted;       /* already in address order (overlapping pieces last) */
	bool counted;      /* its frames are in the stats already (a frame plan's) */
};

/* The oldest pieces, at most max of them, while their stamp is <=
 * max_stamp (aged stores only) and the bytes taken so far are <
 * max_bytes.  by_address: the caller sorts them (scratch comes with them,
 * or they come sorted); else they come in age order. */
void purge__store_take_oldest(struct purge__store *s, size_t max, uint64_t max_stamp,
                              uint64_t max_bytes, bool by_address, struct purge__take *t);
/* Everything, in age order: the store starts over. */
void purge__store_take_all(struct purge__store *s, struct purge__take *t);
/* Pieces that overlap indexed ones (at most half the pool a take). */
void purge__store_take_ovl(struct purge__store *s, struct purge__take *t);

#pragma GCC visibility pop

#endif
