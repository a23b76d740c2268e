/* SPDX-License-Identifier: MIT */
/*
 * White-box check of a queue's pending store (src/store.h): the age list,
 * the free pieces, where each piece is (index, overlap list, not indexed
 * yet), the index's count, and the pending bytes against the books.  The
 * fuzz driver runs it after every operation.
 */
#ifndef TESTS_STORE_CHECK_H
#define TESTS_STORE_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "internal.h"

/* NULL when the store is consistent, else what is wrong. */
const char *store_check(const purge_queue *q);

#endif
