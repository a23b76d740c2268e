/* SPDX-License-Identifier: MIT */
/*
 * pending-bench: how many purge calls the patched jemalloc makes for two
 * patterns from the outside review (issue 28), read from its own counters
 * (stats.arenas.4096.libpurge.{pmadv,madv}_calls, at the epoch), with the
 * most bytes that were pending at once (sampled after every free).
 *
 *   pending-bench big    319 blocks of 1-8 MiB (a fixed sequence), written,
 *                        then freed one by one, then arena.4096.purge
 *   pending-bench small  69 blocks of 64 KiB, written, freed, then
 *                        arena.4096.purge
 *
 * Run it with the patched libjemalloc.so.2 preloaded and MALLOC_CONF set
 * (run.sh).  Prints one line: pattern, ranges enqueued, calls, flushes,
 * peak pending bytes.  Stock jemalloc has no such counters: count its
 * madvise calls with strace -f -c -e trace=madvise instead.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
static mallctl_fn ctl;

static uint64_t get(const char *f)
{
	char name[128];
	uint64_t v = 0, e = 1;
	size_t sz = sizeof(v);
	if (ctl == NULL)
		return 0;
	ctl("epoch", NULL, NULL, &e, sizeof(e));
	snprintf(name, sizeof name, "stats.arenas.4096.libpurge.%s", f);
	if (ctl(name, &v, &sz, NULL, 0) != 0)
		return 0;
	return v;
}

int main(int argc, char **argv)
{
	int big = argc > 1 && !strcmp(argv[1], "big");
	unsigned n = big ? 319 : 69;
	static void *p[319];
	ctl = (mallctl_fn)dlsym(RTLD_DEFAULT, "mallctl");
	uint64_t s = 88172645463325252ull;
	for (unsigned i = 0; i < n; i++) {
		size_t sz = 64u << 10;
		if (big) {
			s ^= s << 13, s ^= s >> 7, s ^= s << 17;
			sz = (1u << 20) + (size_t)(s % (7u << 20));
		}
		p[i] = malloc(sz);
		if (p[i] == NULL)
			return 1;
		memset(p[i], 1, sz);
	}
	uint64_t peak = 0, c0 = get("pmadv_calls") + get("madv_calls");
	for (unsigned i = 0; i < n; i++) {
		free(p[i]);
		uint64_t pend = get("pending_bytes");
		if (pend > peak)
			peak = pend;
	}
	if (ctl != NULL && ctl("arena.4096.purge", NULL, NULL, NULL, 0) != 0)
		return 1;
	printf("%s ranges=%llu calls=%llu flushes=%llu peak_pending_mib=%.1f\n",
	       big ? "big" : "small", (unsigned long long)get("enqueued_ranges"),
	       (unsigned long long)(get("pmadv_calls") + get("madv_calls") - c0),
	       (unsigned long long)get("flushes"), (double)peak / (1 << 20));
	return 0;
}
