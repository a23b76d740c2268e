/* SPDX-License-Identifier: MIT */
/*
 * The flight: how a shared queue (PURGE_LOCKED, or guarded by the caller's
 * lock through purge_set_lock) settles without holding its lock across the
 * kernel.  The shape is io_uring's: submission apart from completion.
 *
 *   take      under the lock, a flush takes a round out of the store and
 *             copies it, sorted, into the flight array (the store and its
 *             scratch stay free for other threads);
 *   zone      under the lock, it plans one call from the round's cursor and
 *             publishes the call's hull (the zone) and where the part no
 *             call has taken yet begins (`next`);
 *   call      without the lock, the system call(s) of that plan;
 *   complete  under the lock again, it books the plan's bytes, ends the
 *             zone, and lets the cancels that waited for it go first.
 *
 * Meanwhile other threads enqueue (into the store), read stats, set the
 * batch, and cancel: a cancel removes what it covers from the store and
 * from the round's part that no call has taken yet (so no later call
 * purges it), and, when it touches the zone, waits for that one plan to
 * complete (it cannot take back what the kernel is freeing).  Flushes of
 * other threads wait for the running one; automatic flushes they would
 * start are left to it (`want`).  Only the flushing thread (`owner`)
 * answers -EBUSY from inside on_failure.
 *
 * Who writes what.  Every field is written with the queue's lock held; the
 * fields that waits test (seq, waiters, fork, parked and the queue's busy)
 * are written with `m` held too, so that a thread can wait on `c` with `m`
 * alone after it let go of the queue's lock, and miss no wake-up.  Order:
 * the queue's lock, then `m`; never the other way.
 */
#ifndef PURGE_FLIGHT_H
#define PURGE_FLIGHT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "purge.h"
#include "store.h"
#include "flight_state.h"

#pragma GCC visibility push(hidden) /* internal, as in internal.h */

/* Let go of the queue's lock for a system call, and take it again. */
void purge__flight_drop(purge_queue *q);
void purge__flight_retake(purge_queue *q);

/* A flush begins and ends (busy, owner, the waits for its end). */
void purge__flight_begin(purge_queue *q, uint64_t t0);
void purge__flight_end(purge_queue *q);
/* Until no other thread's flush runs (lets go of the lock meanwhile). */
void purge__flight_wait_idle(purge_queue *q);

/* A sorted round (overlapping ranges last) into the flight array; returns
 * the copy, which the flush settles. */
struct iovec *purge__flight_load(purge_queue *q, const struct iovec *v, size_t n, uint64_t stamp);
void purge__flight_unload(purge_queue *q);

/* The flusher planned [from, to) of the round (index, offset pairs): the
 * zone, and where cancels may take from. */
void purge__flight_zone(purge_queue *q, size_t i, size_t off, size_t pi, size_t poff);
/* The plan is booked and the cursor is at (i, off): cancels may take from
 * there, but for v[i..taint), which a failed call touched (its pages may
 * be freed in part: they go to the kernel again, one by one); those that
 * waited go first; a fork may park the flusher here. */
void purge__flight_complete(purge_queue *q, size_t i, size_t off, size_t taint);

/* A cancel's part: remove [a, b) from the round where no call has taken
 * it, into cut (a split appends its right part to the round, or puts it
 * back in the store, with the round's age, when the spare slots are used
 * up: purge__flight_put_back).  Returns
 * false when a split found the store full: the caller waits for the
 * flush to end and cancels again. */
bool purge__flight_cancel(purge_queue *q, uintptr_t a, uintptr_t b, struct purge__cut *cut);
/* Does [a, b) touch the zone?  Then wait for that plan (lets go of the
 * lock meanwhile). */
bool purge__flight_touches(const purge_queue *q, uintptr_t a, uintptr_t b);
void purge__flight_wait_zone(purge_queue *q);
/* Does [a, b) touch the zone, or ranges a failed call touched?  Then
 * wait for the next plan to be booked (without holding the flusher up). */
bool purge__flight_unbooked(const purge_queue *q, uintptr_t a, uintptr_t b);
void purge__flight_wait_booked(purge_queue *q);
/* The cancel that waited took its part: the flusher may go on. */
void purge__flight_waited(purge_queue *q);

/* Fork: prepare parks the flusher between plans (the caller holds the
 * lock); parent lets it go on; child makes the waits usable and answers
 * true when a round is left that the child must finish (drain.c). */
void purge__flight_fork_prepare(purge_queue *q);
void purge__flight_fork_parent(purge_queue *q);
bool purge__flight_fork_child(purge_queue *q);

#pragma GCC visibility pop

#endif
