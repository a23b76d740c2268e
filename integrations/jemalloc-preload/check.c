/* SPDX-License-Identifier: MIT */
/*
 * PURGE_JEMALLOC_CHECK=1: the shim proves its two promises as it goes, and
 * aborts with a message on the first breach.
 *  1. jemalloc never receives a range with a purge still pending: after the
 *     hand-out's cancel, a second cancel of the same bytes must answer 0
 *     (nothing of them pending).  Nobody else enqueues these bytes in
 *     between: the shim is handing them out, and a double release would
 *     be caught on its own.
 *  2. Every range reported *zero = true reads as zeros, word by word.
 * Slow on purpose (reads every such page); for tests, not production.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "shim.h"

void check_fail(const char *what, const void *addr, size_t len)
{
	char buf[256], tag[64];

	shim_tag(tag, sizeof(tag), "purge_jemalloc");
	int n = snprintf(buf, sizeof(buf), "%s: CHECK FAILED: %s at %p len %zu\n", tag, what, addr,
	                 len);

	if (n > 0)
		(void)!write(2, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	abort();
}

int check_cancel(struct shard *sh, void *addr, size_t len)
{
	int ret = purge_cancel(sh->q, addr, len);
	int again = purge_cancel(sh->q, addr, len);

	atomic_fetch_add_explicit(&sh->ct.check_pending, 1, memory_order_relaxed);
	if (again != 0)
		check_fail("range still pending purge when handed to jemalloc", addr, len);
	return ret;
}

void check_zero(struct shard *sh, const void *addr, size_t len, const char *why)
{
	const volatile uint64_t *w = addr;

	for (size_t i = 0; i < len / sizeof(*w); i++)
		if (w[i]) {
			char what[96];
			snprintf(what, sizeof(what), "%s reported zero but word %zu is not", why,
			         i);
			check_fail(what, addr, len);
		}
	atomic_fetch_add_explicit(&sh->ct.check_zero_ranges, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&sh->ct.check_zero_pages, len / shim.page, memory_order_relaxed);
}
