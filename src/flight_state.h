/* SPDX-License-Identifier: MIT */
/*
 * The state of a shared queue's flight, embedded in the queue (internal.h):
 * the type only, so that the queue can hold it without depending on the
 * flight's code (flight.h, flight.c), which depends on the queue.  What the
 * fields mean and who writes them: flight.h.
 */
#ifndef PURGE_FLIGHT_STATE_H
#define PURGE_FLIGHT_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#pragma GCC visibility push(hidden) /* internal, as in internal.h */

/* Slots after a round for the right parts of ranges cancels split. */
#define PURGE_FLIGHT_SPARE 64

struct purge__flight {
	struct iovec *v;            /* [npieces + 1 + PURGE_FLIGHT_SPARE]: the round in flight */
	size_t n, cap;              /* its ranges (0: no round in flight); slots */
	size_t ordered;             /* v[0..ordered) in address order, disjoint */
	uintptr_t tail_lo, tail_hi; /* hull of v[ordered..n) (scanned, not searched) */
	size_t next, next_off;      /* no call has taken v[next] + next_off on */
	size_t taint;               /* v[next..taint): a failed call may have freed some of
	                             * their pages; they go again one by one (flush.c) */
	uintptr_t zone_lo, zone_hi; /* hull of the plan in the kernel; empty: lo >= hi */
	uint64_t seq;               /* plans completed */
	uint64_t stamp;             /* the round's oldest enqueue stamp, at its take */
	uint64_t spilled;           /* split parts given back to the store, ever */
	uint64_t t0;                /* when the flush began (for a fork child) */
	unsigned waiters;           /* cancels waiting for the zone */
	pthread_t owner;            /* the flushing thread, while the queue is busy */
	bool want;                  /* another thread crossed a threshold meanwhile */
	bool fork, parked;          /* purge_fork_prepare asked; the flusher waits */
	bool alone;                 /* a fork child finishes the round: no lock to let go */
	pthread_mutex_t m;
	pthread_cond_t c;
};

#pragma GCC visibility pop

#endif
