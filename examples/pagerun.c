/* SPDX-License-Identifier: MIT */
/*
 * pagerun: a minimal page-run allocator that purges through libpurge.
 *
 * One mapping holds the queue (in its first pages) and a region carved into
 * runs of whole pages.  Freeing a run queues it with purge_enqueue() instead
 * of calling madvise() at once; allocating a run first takes back, with
 * purge_cancel(), whatever part of it is still queued.  Cancel's answer says
 * whether the run reads as zero: 0 (nothing was still pending, so all of it
 * was purged) with a zeroing advice and no failure reported for it means
 * zeros, and the allocator may skip its memset (calloc).  The queue flushes
 * itself when it holds `capacity` ranges, more than `max_pending_bytes`, or
 * a range older than `max_delay_ns`.
 *
 * main() drives random alloc/free traffic and checks, after every flush,
 * that live runs kept their bytes and, once nothing is pending, that free
 * pages read back as zero (MADV_DONTNEED); and, at every allocation that
 * cancel's answer calls zero, that the run really reads as zero: the queue
 * never purged memory that was handed out, and did purge what was freed.
 * It also checks that each of the three thresholds started flushes and that
 * both answers of purge_cancel() came up.  Exit status 0: all held; 1: a
 * check failed; 2: bad arguments (it takes none but --help).
 */
#include <purge.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define REGION_PAGES 256
#define MAX_RUN      8 /* pages */
#define OPS          5000

struct arena {
	unsigned char *base; /* first page of the region (after the queue) */
	size_t pg;
	purge_queue *q;
	uint8_t tag[REGION_PAGES];          /* 0: free, else the byte the owning run holds */
	uint8_t bad[REGION_PAGES];          /* on_failure named it since it was freed */
	uint8_t len[REGION_PAGES];          /* at a run's first page: its length in pages */
	unsigned live[REGION_PAGES], nlive; /* first pages of live runs */
	unsigned failures;
	unsigned by_count, by_bytes, by_age; /* automatic flushes, by threshold */
	unsigned zero_reuse, dirty_reuse;    /* allocations cancel called zero, or not */
	int zeroed;                          /* the queue's advice zeroes (stats.zeroed) */
};

static int failed(const char *what, long n)
{
	fprintf(stderr, "pagerun: FAIL: %s (%ld)\n", what, n);
	return 1;
}

/* Integration point: ranges the kernel refused.  A real allocator must not
 * count them as zeroed (calloc would have to clear them); here any failure
 * is a bug, since the region is plain private anonymous memory. */
static void on_purge_failure(void *arg, void *addr, size_t len, int err)
{
	struct arena *a = arg;

	fprintf(stderr, "pagerun: not purged %p+%zu: %s\n", addr, len, strerror(-err));
	a->failures++;
	for (size_t off = 0; off < len; off += a->pg)
		a->bad[((unsigned char *)addr + off - a->base) / a->pg] = 1;
}

static int all_zero(const unsigned char *p, size_t len)
{
	for (size_t b = 0; b < len; b++)
		if (p[b] != 0)
			return 0;
	return 1;
}

/* The zero rule of purge.h: cancel answered 0, the advice zeroes, and no
 * failure was reported for the run since it was freed. */
static int reads_as_zero(const struct arena *a, unsigned i, unsigned n, int pending)
{
	if (pending || !a->zeroed)
		return 0;
	for (unsigned k = i; k < i + n; k++)
		if (a->bad[k])
			return 0;
	return 1;
}

static uint32_t rnd(void)
{
	static uint32_t x = 2463534242u; /* xorshift32: fixed seed, same run every time */

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

/* First fit from a random page, so freed runs get reused in varied pieces. */
static long find_free(const struct arena *a, unsigned n)
{
	unsigned start = rnd() % REGION_PAGES;

	for (unsigned k = 0; k < REGION_PAGES; k++) {
		unsigned i = (start + k) % REGION_PAGES, j = 0;

		while (j < n && i + j < REGION_PAGES && a->tag[i + j] == 0)
			j++;
		if (j == n)
			return i;
	}
	return -1;
}

static int run_alloc(struct arena *a, unsigned n, uint8_t tag)
{
	long i = find_free(a, n);
	unsigned char *p;

	if (i < 0)
		return 0; /* region too fragmented: the caller frees instead */
	p = a->base + (size_t)i * a->pg;
	/* Integration point: reuse.  The pages may still be queued from an
	 * earlier free; without this a later flush would wipe the new data.
	 * The answer says whether any of it was still pending. */
	int pending = purge_cancel(a->q, p, n * a->pg);
	if (pending < 0)
		return -1;
	if (reads_as_zero(a, (unsigned)i, n, pending)) {
		if (!all_zero(p, n * a->pg)) {
			failed("cancel answered 0 but the run is not zero", i);
			return -2;
		}
		a->zero_reuse++; /* calloc could skip its memset here */
	} else {
		a->dirty_reuse++;
	}
	memset(&a->tag[i], tag, n);
	a->len[i] = (uint8_t)n;
	a->live[a->nlive++] = (unsigned)i;
	memset(p, tag, n * a->pg);
	return 1;
}

static int run_free(struct arena *a, unsigned k)
{
	unsigned i = a->live[k], n = a->len[i];

	a->live[k] = a->live[--a->nlive];
	memset(&a->tag[i], 0, n);
	memset(&a->bad[i], 0, n);
	/* Integration point: free.  No system call here unless a threshold is
	 * crossed; then the whole queue, this run included, is purged. */
	return purge_enqueue(a->q, a->base + (size_t)i * a->pg, n * a->pg);
}

/* After any flush every live page holds its run's tag.  Once nothing is
 * pending, with a zeroing advice, every free page reads zero too. */
static int check_pages(const struct arena *a, int zeroed)
{
	for (unsigned i = 0; i < REGION_PAGES; i++) {
		const unsigned char *p = a->base + (size_t)i * a->pg;
		uint8_t want = a->tag[i];

		if (want == 0 && !zeroed)
			continue;
		for (size_t b = 0; b < a->pg; b++)
			if (p[b] != want)
				return failed(
				    want ? "live page lost its bytes" : "freed page not zero", i);
	}
	return 0;
}

/* The limits hold between the stats `b` before and `s` after one step, and
 * which threshold made an enqueue flush. */
static int check_thresholds(struct arena *a, const struct purge_config *cfg, int aged,
                            const struct purge_stats *b, const struct purge_stats *s)
{
	uint64_t added = s->enqueued_bytes - b->enqueued_bytes;

	if (aged && s->flushes == b->flushes)
		return failed("no flush after max_delay_ns", (long)b->pending_ranges);
	if (s->auto_flushes != b->auto_flushes) {
		if (aged)
			a->by_age++;
		else if (b->pending_bytes + added > cfg->max_pending_bytes)
			a->by_bytes++;
		else
			a->by_count++;
	}
	/* The enqueue that fills the last slot flushes; a cancel that splits a
	 * range may fill it. */
	if (s->pending_ranges > cfg->capacity || (added && s->pending_ranges == cfg->capacity))
		return failed("queue full after purge_enqueue", (long)s->pending_ranges);
	if (s->pending_bytes > cfg->max_pending_bytes)
		return failed("pending bytes above max_pending_bytes", (long)s->pending_bytes);
	return 0;
}

/* Ages come from CLOCK_MONOTONIC_COARSE, a tick (1-10 ms) at a time:
 * sleep a little more than two ticks past the limit. */
static void sleep_past(uint64_t ns)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(ns + 25 * 1000 * 1000)};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int step(struct arena *a, const struct purge_config *cfg, unsigned op)
{
	struct purge_stats before, after;
	int aged = 0, ret;

	purge_get_stats(a->q, &before);
	if (op % 500 == 499 && before.pending_ranges > 0 && a->nlive > 0) {
		sleep_past(cfg->max_delay_ns); /* the free below must flush by age */
		aged = 1;
	}
	/* Half allocations, half frees (a free when the region is full).
	 * Phases of single pages fill the queue's slots before its byte
	 * limit; phases of longer runs cross the byte limit first. */
	ret = 0;
	if (a->nlive == 0 || (!aged && rnd() % 2))
		ret = run_alloc(a, 1 + rnd() % (op / 1000 % 2 ? MAX_RUN : 1),
		                (uint8_t)(1 + op % 255));
	if (ret == -1)
		return failed("purge_cancel", ret);
	if (ret < 0)
		return 1;
	if (ret == 0 && (ret = run_free(a, rnd() % a->nlive)) != 0)
		return failed("purge_enqueue", ret);
	purge_get_stats(a->q, &after);
	if (check_thresholds(a, cfg, aged, &before, &after))
		return 1;
	if (after.flushes == before.flushes)
		return 0;
	return check_pages(a, after.zeroed && after.pending_ranges == 0);
}

static int usage(FILE *f, const char *prog)
{
	fprintf(f,
	        "usage: %s [--help]\n"
	        "A page-run allocator on libpurge that checks itself: %d random allocations\n"
	        "and frees in %d pages; live runs must keep their bytes through every flush,\n"
	        "freed runs must read back as zero, and so must every run purge_cancel()\n"
	        "calls zero.  PURGE_MODE=loop runs it on the madvise() loop.\n"
	        "Exit status: 0 all held, 1 a check failed, 2 bad arguments.\n",
	        prog, OPS, REGION_PAGES);
	return f == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
	if (argc > 1) /* no options but --help: anything else is a mistake */
		return usage(argc == 2 && !strcmp(argv[1], "--help") ? stdout : stderr, argv[0]);

	struct arena a = {.pg = (size_t)sysconf(_SC_PAGESIZE)};
	struct purge_config cfg = {
	    .capacity = 32,                 /* count threshold */
	    .max_pending_bytes = 64 * a.pg, /* bytes threshold */
	    .max_delay_ns = 1000 * 1000,    /* age threshold: 1 ms */
	    .on_failure = on_purge_failure,
	    .arg = &a,
	};
	size_t qbytes = purge_queue_bytes(cfg.capacity);
	size_t qlen = (qbytes + a.pg - 1) / a.pg * a.pg; /* whole pages: never purged */
	struct purge_stats st;
	unsigned char *map;
	int ret;

	map = mmap(NULL, qlen + REGION_PAGES * a.pg, PROT_READ | PROT_WRITE,
	           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (qbytes == 0 || map == MAP_FAILED)
		return failed("mmap", errno);
	/* Integration point: the queue lives in the allocator's own mapping;
	 * the library never allocates. */
	ret = purge_queue_init(&a.q, map, qlen, &cfg);
	if (ret != 0)
		return failed("purge_queue_init", ret);
	a.base = map + qlen;
	purge_get_stats(a.q, &st);
	a.zeroed = st.zeroed;

	for (unsigned op = 0; op < OPS; op++)
		if (step(&a, &cfg, op))
			return 1;
	/* Integration point: idle.  Nothing runs in the background, so an
	 * allocator going quiet flushes by hand. */
	ret = purge_flush(a.q);
	purge_get_stats(a.q, &st);
	if (ret != 0 || a.failures != 0 || check_pages(&a, st.zeroed))
		return failed("final flush", ret);
	if (!a.by_count || !a.by_bytes || !a.by_age)
		return failed("a threshold never triggered", 0);
	if (!a.zero_reuse || !a.dirty_reuse)
		return failed("purge_cancel never answered both ways", a.zero_reuse);
	printf("pagerun: ok: %s; automatic flushes by count %u, bytes %u, age %u; "
	       "reused runs known zero %u, dirty %u; %llu process_madvise + %llu madvise calls\n",
	       st.backend == PURGE_BACKEND_VECTORED ? "vectored" : "loop", a.by_count, a.by_bytes,
	       a.by_age, a.zero_reuse, a.dirty_reuse, (unsigned long long)st.pmadv_calls,
	       (unsigned long long)st.madv_calls);
	ret = purge_queue_destroy(a.q);
	munmap(map, qlen + REGION_PAGES * a.pg);
	return ret == 0 ? 0 : failed("purge_queue_destroy", ret);
}
