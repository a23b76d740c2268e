/* SPDX-License-Identifier: MIT */
/*
 * Sorting (key, value) pairs by key without allocating: glibc's qsort may
 * call malloc.  Keys are page-aligned addresses, so a least-significant-
 * digit radix sort over the bits in which they differ takes a few linear
 * passes: O(n) time, with a scratch array as large as the input.
 */
#include "compat.h"

#include <string.h>

#include "internal.h"

#define DIGIT 8 /* bits per pass */
#define SMALL 48

static void insertion(struct purge__kv *a, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		struct purge__kv v = a[i];
		size_t j = i;
		for (; j > 0 && a[j - 1].key > v.key; j--)
			a[j] = a[j - 1];
		a[j] = v;
	}
}

/* One stable pass on the digit at `shift` of (key - base), from a to b. */
static void pass(const struct purge__kv *a, struct purge__kv *b, size_t n, uintptr_t base,
                 unsigned shift)
{
	size_t count[1u << DIGIT] = {0}, sum = 0;
	const uintptr_t mask = (1u << DIGIT) - 1;

	for (size_t i = 0; i < n; i++)
		count[((a[i].key - base) >> shift) & mask]++;
	for (size_t d = 0; d <= mask; d++) {
		size_t c = count[d];
		count[d] = sum;
		sum += c;
	}
	for (size_t i = 0; i < n; i++)
		b[count[((a[i].key - base) >> shift) & mask]++] = a[i];
}

void purge__sort(struct purge__kv *a, struct purge__kv *tmp, size_t n)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0, bits = 0;
	bool sorted = true;

	for (size_t i = 0; i < n; i++) {
		lo = a[i].key < lo ? a[i].key : lo;
		hi = a[i].key > hi ? a[i].key : hi;
		bits |= a[i].key;
		sorted = sorted && (i == 0 || a[i - 1].key <= a[i].key);
	}
	if (sorted) /* the common case: an allocator freeing in address order */
		return;
	if (n <= SMALL) {
		insertion(a, n);
		return;
	}
	/* keys share their low zero bits (page alignment): skip them */
	unsigned width = sizeof(uintptr_t) * 8;
	unsigned shift =
	    (unsigned)__builtin_ctzll((unsigned long long)bits | (1ull << (width - 1)));
	struct purge__kv *from = a, *to = tmp;
	for (; shift < width && ((hi - lo) >> shift) != 0; shift += DIGIT) {
		pass(from, to, n, lo, shift);
		struct purge__kv *t = from;
		from = to;
		to = t;
	}
	if (from != a)
		memcpy(a, from, n * sizeof(*a));
}
