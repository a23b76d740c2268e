/* SPDX-License-Identifier: MIT */
/*
 * The radix sort of sort.h.  Keys are page-aligned addresses, so a least-
 * significant-digit sort over the bits in which they differ takes a few
 * linear passes.  Elements are moved and their keys read with memcpy of a
 * constant size, which compiles to plain loads and stores and reads either
 * element type without breaking the aliasing rules.
 */
#include "compat.h"

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sort.h"

#define SORT_ELEM  sizeof(struct iovec)
#define SORT_DIGIT 8 /* bits per pass */
#define SORT_SMALL 48

static_assert(sizeof(struct purge__kv) == SORT_ELEM, "pairs and iovecs sort alike");
static_assert(offsetof(struct iovec, iov_base) == 0 && offsetof(struct purge__kv, key) == 0 &&
                  sizeof(void *) == sizeof(uintptr_t),
              "the key is a pointer-sized first field");

static uintptr_t sort_key(const char *a, size_t i)
{
	uintptr_t k;

	memcpy(&k, a + i * SORT_ELEM, sizeof(k));
	return k;
}

static void sort_insertion(char *a, size_t n)
{
	char v[SORT_ELEM];

	for (size_t i = 1; i < n; i++) {
		uintptr_t k = sort_key(a, i);
		size_t j = i;
		memcpy(v, a + i * SORT_ELEM, SORT_ELEM);
		for (; j > 0 && sort_key(a, j - 1) > k; j--)
			memcpy(a + j * SORT_ELEM, a + (j - 1) * SORT_ELEM, SORT_ELEM);
		memcpy(a + j * SORT_ELEM, v, SORT_ELEM);
	}
}

/* One stable pass on the digit at `shift` of (key - base), from a to b. */
static void sort_pass(const char *a, char *b, size_t n, uintptr_t base, unsigned shift)
{
	size_t count[1u << SORT_DIGIT] = {0}, sum = 0;
	const uintptr_t mask = (1u << SORT_DIGIT) - 1;

	for (size_t i = 0; i < n; i++)
		count[((sort_key(a, i) - base) >> shift) & mask]++;
	for (size_t d = 0; d <= mask; d++) {
		size_t c = count[d];
		count[d] = sum;
		sum += c;
	}
	for (size_t i = 0; i < n; i++) {
		size_t at = count[((sort_key(a, i) - base) >> shift) & mask]++;
		memcpy(b + at * SORT_ELEM, a + i * SORT_ELEM, SORT_ELEM);
	}
}

void purge__sort(void *va, void *vtmp, size_t n)
{
	char *a = va, *from = va, *to = vtmp;
	uintptr_t lo = UINTPTR_MAX, hi = 0, bits = 0, prev = 0;
	bool sorted = true;

	for (size_t i = 0; i < n; i++) {
		uintptr_t k = sort_key(a, i);
		lo = k < lo ? k : lo;
		hi = k > hi ? k : hi;
		bits |= k;
		sorted = sorted && prev <= k;
		prev = k;
	}
	if (sorted) /* the common case: an allocator freeing in address order */
		return;
	if (n <= SORT_SMALL) {
		sort_insertion(a, n);
		return;
	}
	/* keys share their low zero bits (page alignment): skip them */
	unsigned width = sizeof(uintptr_t) * 8;
	unsigned shift =
	    (unsigned)__builtin_ctzll((unsigned long long)bits | (1ull << (width - 1)));
	for (; shift < width && ((hi - lo) >> shift) != 0; shift += SORT_DIGIT) {
		sort_pass(from, to, n, lo, shift);
		char *t = from;
		from = to;
		to = t;
	}
	if (from != a)
		memcpy(a, from, n * SORT_ELEM);
}

size_t purge__sort_overlaps_last(struct iovec *a, struct iovec *tmp, size_t n)
{
	size_t k = 0, r = 0;
	uintptr_t end = 0;

	for (size_t i = 0; i < n; i++) {
		uintptr_t s = (uintptr_t)a[i].iov_base;
		if (k && s < end) {
			tmp[r++] = a[i];
			continue;
		}
		if (k != i)
			a[k] = a[i];
		k++;
		end = s + a[i].iov_len;
	}
	memcpy(a + k, tmp, r * sizeof(*a));
	return k;
}
