/* SPDX-License-Identifier: MIT */
/*
 * churn: a server-like heap for the allocators' measurements.  T threads own N
 * values between them (about 1 GiB of 16 KiB values by default).  Each
 * round replaces every value of a thread once, in random order: the big
 * values by small ones (a cache whose entries shrink after a change of
 * workload: the heap gives back nearly all of its 1 GiB), then the small
 * ones by big ones again (the heap grows back).  Plain malloc/free, so it
 * runs under any allocator.
 *
 * Every value carries its key and the run's seed at both ends, checked
 * before it is freed: a purge that hit live memory turns them to zero.
 *
 *   churn [-t threads] [-m total[K|M|G]] [-b big] [-s small]
 *         [-d seconds | -n rounds] [-S seed]
 *
 * Prints `RESULT records_per_s=... chunks=...` like ebizzy-lite (a record
 * is one replaced value, so is a chunk), which measure.sh reads.
 */
#include <inttypes.h>
#include <sched.h>

#include "workload.h"

struct opts {
	unsigned threads, rounds, seconds;
	size_t total, big, small;
	uint64_t seed;
};

struct worker {
	const struct opts *o;
	unsigned id;
	size_t first, n; /* its slots */
	uint64_t replaced;
};

static void **slot;
static atomic_bool stop_flag;
static atomic_uint ready;

static uint64_t tag(uint64_t key, uint64_t seed)
{
	return (key + 1) * 0x9E3779B97F4A7C15u ^ seed;
}

/* Write the whole value, as a cache filling an entry does. */
static void *make(size_t len, uint64_t key, uint64_t seed)
{
	uint64_t *p = malloc(len);

	if (!p) {
		fprintf(stderr, "churn: out of memory\n");
		exit(1);
	}
	memset(p, (int)(key & 0x7f) | 1, len);
	p[0] = tag(key, seed);
	p[len / 8 - 1] = tag(key, seed) ^ len;
	return p;
}

static void check(const uint64_t *p, size_t len, uint64_t key, uint64_t seed)
{
	if (p[0] != tag(key, seed) || p[len / 8 - 1] != (tag(key, seed) ^ len)) {
		fprintf(stderr, "churn: value %" PRIu64 " (%zu bytes at %p) damaged\n", key, len,
		        (const void *)p);
		abort();
	}
}

/* One pass over the worker's slots in random order, from size `from` to `to`. */
static bool pass(struct worker *w, size_t from, size_t to, uint64_t *rs)
{
	const struct opts *o = w->o;

	for (size_t k = 0; k < w->n; k++) {
		size_t i = w->first + (size_t)(next(rs) % w->n);
		/* slots already replaced this pass hold `to`: find one that holds `from` */
		while (((uintptr_t)slot[i] & 1) == (to == o->big))
			i = i + 1 < w->first + w->n ? i + 1 : w->first;
		uint64_t *p = (uint64_t *)((uintptr_t)slot[i] & ~(uintptr_t)1);
		check(p, from, i, o->seed);
		free(p);
		slot[i] = (void *)((uintptr_t)make(to, i, o->seed) | (to == o->big));
		w->replaced++;
		if ((k & 255) == 0 && !o->rounds && atomic_load(&stop_flag))
			return false;
	}
	return true;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	uint64_t rs = o->seed * 2654435761u + w->id + 1;

	for (size_t i = w->first; i < w->first + w->n; i++)
		slot[i] = (void *)((uintptr_t)make(o->big, i, o->seed) | 1);
	atomic_fetch_add(&ready, 1);
	while (atomic_load(&ready) < o->threads)
		sched_yield();
	for (unsigned r = 0; !o->rounds || r < o->rounds; r++)
		if (!pass(w, o->big, o->small, &rs) || !pass(w, o->small, o->big, &rs))
			break;
	for (size_t i = w->first; i < w->first + w->n; i++)
		free((void *)((uintptr_t)slot[i] & ~(uintptr_t)1));
	return NULL;
}

/* ---- options ---------------------------------------------------------- */

static const char usage[] = "usage: churn [-t threads] [-m total[K|M|G]] [-b big] [-s small]\n"
                            "             [-d seconds | -n rounds] [-S seed]\n"
                            "  sizes are multiples of 8, small >= 16, big > small;\n"
                            "  defaults: -t 2 -m 1G -b 16384 -s 512 -d 5 -S 1\n"
                            "  -h, --help  this text\n";

static void parse(int argc, char **argv, struct opts *o)
{
	const struct wl_opt t[] = {{'t', WL_UNSIGNED, &o->threads}, {'m', WL_SIZE, &o->total},
	                           {'b', WL_SIZE, &o->big},         {'s', WL_SIZE, &o->small},
	                           {'d', WL_UNSIGNED, &o->seconds}, {'n', WL_UNSIGNED, &o->rounds},
	                           {'S', WL_U64, &o->seed},         {0, WL_FLAG, NULL}};

	*o = (struct opts){2, 0, 5, (size_t)1 << 30, 16384, 512, 1};
	wl_parse(argc, argv, t, usage);
	if (!o->threads || o->total < o->big || o->small < 16 || o->big <= o->small || o->big % 8 ||
	    o->small % 8)
		wl_usage(stderr, usage);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct timed t;

	parse(argc, argv, &o);
	size_t n = o.total / o.big;
	slot = calloc(n, sizeof(*slot));
	struct worker *w = calloc(o.threads, sizeof(*w));
	if (!slot || !w)
		return 1;
	printf("churn: malloc=%s\n", malloc_name());
	printf("churn: %u threads, %zu values of %zu bytes, replaced by %zu-byte ones and back\n",
	       o.threads, n, o.big, o.small);
	for (unsigned i = 0; i < o.threads; i++) {
		w[i] = (struct worker){.o = &o, .id = i, .first = n * i / o.threads};
		w[i].n = n * (i + 1) / o.threads - w[i].first;
	}
	if (!timed_start(&t))
		return 1;
	run_workers(worker_main, w, sizeof(*w), o.threads, o.rounds ? 0 : o.seconds, &stop_flag);
	timed_stop(&t);
	uint64_t replaced = 0;
	for (unsigned i = 0; i < o.threads; i++)
		replaced += w[i].replaced;
	printf("RESULT records_per_s=%.0f chunks=%" PRIu64 " seconds=%.3f user_s=%.3f sys_s=%.3f"
	       " peak_rss_kib=%" PRIu64 " avg_rss_kib=%" PRIu64 "\n",
	       (double)replaced / t.secs, replaced, t.secs, t.user_s, t.sys_s, t.peak_kib,
	       t.avg_kib);
	free(w);
	free(slot);
	return 0;
}
