/* SPDX-License-Identifier: MIT */
/*
 * Sorting without allocating (glibc's qsort may call malloc): a radix sort
 * by address over the bits in which the keys differ, O(n) with a scratch
 * array as large as the input.  It sorts flush selections (iovecs, by
 * base) and bulk-indexing pairs ((key, value), by key): both are a
 * pointer-sized key and a pointer-sized value.  Stable; sorted input costs
 * one pass.
 */
#ifndef PURGE_SORT_H
#define PURGE_SORT_H

#include <stddef.h>
#include <sys/uio.h>

#include "index.h"

#pragma GCC visibility push(hidden) /* internal, as in internal.h */

/* a and tmp hold n elements of struct iovec or struct purge__kv. */
void purge__sort(void *a, void *tmp, size_t n);

static inline void purge__sort_iov(struct iovec *a, struct iovec *tmp, size_t n)
{
	purge__sort(a, tmp, n);
}

static inline void purge__sort_kv(struct purge__kv *a, struct purge__kv *tmp, size_t n)
{
	purge__sort(a, tmp, n);
}

/* After sorting a by base: ranges that overlap one before them (bytes
 * enqueued again while pending) move to the end, in order, so that the
 * others still merge with their neighbours (tmp: n iovecs of scratch).
 * Returns how many stay in front. */
size_t purge__sort_overlaps_last(struct iovec *a, struct iovec *tmp, size_t n);

#pragma GCC visibility pop

#endif
