/* SPDX-License-Identifier: MIT */
/*
 * Smoke test of the public API on real memory, in plain C (no Criterion),
 * so that it builds and runs wherever the library does: musl, -m32, cross
 * targets, vendored copies (.ci/check-vendor.sh builds it with -std=c11).
 *
 * A mapping of 16 pages, each filled with its own byte; pages 0 and 15 are
 * canaries that are never enqueued.  Checks: purge_enqueue()'s answers
 * (bad arguments refused), purge_cancel()'s answers (1: it removed pending
 * bytes, 0: nothing was pending), purge_flush() (no failure on plain
 * memory; a hole is reported once, with -ENOMEM), the stats identity and
 * counters, the automatic flush of a full queue, and, page by page, that
 * purged pages read zero (MADV_DONTNEED) and every other page, the canaries
 * included, kept its bytes.  Whichever path the process gets (vectored or
 * the madvise loop, e.g. PURGE_MODE=loop), the answers must be the same.
 *
 * Exit status: 0 passed, 1 failed, 77 skipped (no memory to map).
 */
#define _DEFAULT_SOURCE 1 /* MAP_ANONYMOUS under -std=c11 */

#include <purge.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGES 16

static int failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "smoke: %s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond);    \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

struct reports {
	unsigned n;
	int err;
	void *addr;
	size_t len;
};

static void on_failure(void *arg, void *addr, size_t len, int err)
{
	struct reports *r = arg;

	r->n++;
	r->err = err;
	r->addr = addr;
	r->len = len;
}

static unsigned char *base;
static size_t pg;

static unsigned char *page(unsigned i)
{
	return base + (size_t)i * pg;
}

/* Every byte of page i is `want`. */
static int page_is(unsigned i, unsigned char want)
{
	const unsigned char *p = page(i);

	for (size_t k = 0; k < pg; k++)
		if (p[k] != want)
			return 0;
	return 1;
}

static void fill(void)
{
	for (unsigned i = 0; i < PAGES; i++)
		memset(page(i), (int)(0xa0 + i), pg);
}

/* purged[i]: page i must read zero; the others keep 0xa0 + i. */
static void check_pages(const char *when, const int purged[PAGES])
{
	for (unsigned i = 0; i < PAGES; i++) {
		unsigned char want = purged[i] ? 0 : (unsigned char)(0xa0 + i);

		if (!page_is(i, want)) {
			fprintf(stderr, "smoke: %s: page %u should read 0x%02x\n", when, i, want);
			failures++;
		}
	}
}

static void check_identity(const struct purge_stats *st)
{
	CHECK(st->enqueued_bytes ==
	      st->purged_bytes + st->cancelled_bytes + st->failed_bytes + st->pending_bytes);
}

/* Enqueue, cancel and flush on one queue, page by page. */
static void basic(purge_queue *q, int loop)
{
	struct purge_stats st;
	int purged[PAGES] = {0};

	fill();
	CHECK(purge_enqueue(q, page(2), 2 * pg) == 0);  /* A: pages 2-3 */
	CHECK(purge_enqueue(q, page(5), pg) == 0);      /* B: page 5 */
	CHECK(purge_enqueue(q, page(7), 3 * pg) == 0);  /* C: pages 7-9 */
	CHECK(purge_enqueue(q, page(11), 2 * pg) == 0); /* D: pages 11-12 */

	/* Refused without effect: unaligned, NULL, overflowing; len 0 is a no-op. */
	CHECK(purge_enqueue(q, page(13) + 1, pg) == -EINVAL);
	CHECK(purge_enqueue(q, page(13), pg - 1) == -EINVAL);
	CHECK(purge_enqueue(q, NULL, pg) == -EINVAL);
	CHECK(purge_enqueue(NULL, page(13), pg) == -EINVAL);
	CHECK(purge_enqueue(q, page(13), (size_t)0 - pg) == -EINVAL);
	CHECK(purge_enqueue(q, page(13), 0) == 0);

	/* Nothing flushed yet: every page still holds its bytes. */
	check_pages("before the flush", purged);

	CHECK(purge_cancel(q, page(8), pg) == 1);  /* splits C */
	CHECK(purge_cancel(q, page(5), pg) == 1);  /* all of B */
	CHECK(purge_cancel(q, page(5), pg) == 0);  /* B again: nothing pending */
	CHECK(purge_cancel(q, page(14), pg) == 0); /* never enqueued */
	CHECK(purge_cancel(q, page(0), pg) == 0);  /* the canary */
	/* Unaligned bounds widen outward: this takes page 12 off D. */
	CHECK(purge_cancel(q, page(12) + 100, 10) == 1);
	CHECK(purge_cancel(NULL, page(2), pg) == -EINVAL);

	purge_get_stats(q, &st);
	CHECK(st.enqueued_ranges == 4);
	CHECK(st.enqueued_bytes == 8 * pg);
	CHECK(st.cancelled_bytes == 3 * pg);
	CHECK(st.pending_bytes == 5 * pg);
	CHECK(st.purged_bytes == 0 && st.flushes == 0);
	check_identity(&st);

	CHECK(purge_flush(q) == 0);
	purged[2] = purged[3] = purged[7] = purged[9] = purged[11] = 1;
	check_pages("after the flush", purged);

	purge_get_stats(q, &st);
	CHECK(st.purged_bytes == 5 * pg);
	CHECK(st.pending_bytes == 0 && st.pending_ranges == 0);
	CHECK(st.failed_ranges == 0 && st.failed_bytes == 0);
	CHECK(st.flushes == 1 && st.auto_flushes == 0);
	CHECK(st.pmadv_calls + st.madv_calls >= 1);
	CHECK(st.zeroed == 1 && st.advice == MADV_DONTNEED);
	CHECK(st.backend == PURGE_BACKEND_VECTORED || st.backend == PURGE_BACKEND_LOOP);
	if (loop)
		CHECK(st.backend == PURGE_BACKEND_LOOP && st.pmadv_calls == 0);
	if (st.backend == PURGE_BACKEND_LOOP)
		CHECK(st.madv_calls >= 1);
	check_identity(&st);

	/* Settled: cancelling purged memory finds nothing pending, and an
	 * empty flush has nothing to report. */
	CHECK(purge_cancel(q, page(2), 2 * pg) == 0);
	CHECK(purge_flush(q) == 0);
	CHECK(purge_flush(NULL) == -EINVAL);
}

/* A hole in an enqueued range is reported once, with -ENOMEM, and the
 * pages around it are still purged. */
static void hole(purge_queue *q, struct reports *r)
{
	struct purge_stats before, after;
	int purged[PAGES] = {0};

	fill();
	CHECK(munmap(page(4), pg) == 0);
	/* Emulators may accept madvise() on a hole (qemu-user does): then
	 * there is no failure to report. */
	if (madvise(page(4), pg, MADV_DONTNEED) == 0) {
		printf("smoke: madvise() accepts a hole here: hole check skipped\n");
		CHECK(mmap(page(4), pg, PROT_READ | PROT_WRITE,
		           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == page(4));
		return;
	}
	CHECK(purge_enqueue(q, page(2), pg) == 0);
	CHECK(purge_enqueue(q, page(4), pg) == 0);
	CHECK(purge_enqueue(q, page(6), pg) == 0);
	purge_get_stats(q, &before);
	r->n = 0;
	CHECK(purge_flush(q) == 1);
	CHECK(r->n == 1 && r->err == -ENOMEM);
	CHECK(r->addr == page(4) && r->len == pg);
	purge_get_stats(q, &after);
	CHECK(after.failed_ranges == before.failed_ranges + 1);
	CHECK(after.failed_bytes == before.failed_bytes + pg);
	CHECK(after.purged_bytes == before.purged_bytes + 2 * pg);
	check_identity(&after);

	/* Map the hole again and check every other page. */
	CHECK(mmap(page(4), pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
	           0) == page(4));
	memset(page(4), 0xa4, pg);
	purged[2] = purged[6] = 1;
	check_pages("after the flush with a hole", purged);
}

/* The enqueue that fills the last slot flushes the whole queue. */
static void full_queue(void)
{
	struct purge_config cfg = {.capacity = 4};
	struct purge_stats st;
	int purged[PAGES] = {0};
	purge_queue *q;

	CHECK(purge_queue_create(&q, &cfg) == 0);
	if (!q)
		return;
	fill();
	for (unsigned i = 1; i <= 7; i += 2) /* 1, 3, 5, 7: nothing merges */
		CHECK(purge_enqueue(q, page(i), pg) == 0);
	purge_get_stats(q, &st);
	CHECK(st.auto_flushes >= 1 && st.flushes >= 1);
	CHECK(st.purged_bytes == 4 * pg && st.pending_bytes == 0);
	purged[1] = purged[3] = purged[5] = purged[7] = 1;
	check_pages("after the automatic flush", purged);

	/* Destroy settles what is pending. */
	CHECK(purge_enqueue(q, page(10), pg) == 0);
	CHECK(purge_queue_destroy(q) == 0);
	purged[10] = 1;
	check_pages("after destroy", purged);
}

int main(void)
{
	const char *mode = getenv("PURGE_MODE");
	int loop = mode && strcmp(mode, "loop") == 0;
	struct reports reports = {0};
	struct purge_config cfg = {.capacity = 64, .on_failure = on_failure, .arg = &reports};
	size_t size = purge_queue_bytes(cfg.capacity);
	int backend = purge_backend(MADV_DONTNEED);
	purge_queue *q = NULL;
	void *mem;
	char text[4096];

	pg = (size_t)sysconf(_SC_PAGESIZE);
	base = mmap(NULL, PAGES * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED) {
		perror("smoke: mmap");
		return 77;
	}

	CHECK(purge_version() == PURGE_VERSION);
	CHECK(backend == PURGE_BACKEND_VECTORED || backend == PURGE_BACKEND_LOOP);
	if (loop)
		CHECK(backend == PURGE_BACKEND_LOOP);
	CHECK(purge_backend(12345) == -EINVAL);

	/* A queue in caller memory, then one from purge_queue_create(). */
	CHECK(size > 0);
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(mem != MAP_FAILED);
	if (mem != MAP_FAILED) {
		CHECK(purge_queue_init(&q, mem, size - 1, &cfg) == -ENOSPC);
		CHECK(purge_queue_init(&q, mem, size, &cfg) == 0);
		if (q) {
			basic(q, loop);
			hole(q, &reports);
			CHECK(purge_queue_destroy(q) == 0);
		}
		munmap(mem, size);
	}

	q = NULL;
	CHECK(purge_queue_create(&q, NULL) == 0);
	if (q) {
		struct purge_stats st;

		CHECK(purge_set_batch(q, 8) == 0 && purge_get_batch(q) == 8);
		CHECK(purge_set_batch(q, PURGE_BATCH_MAX + 1) == -EINVAL &&
		      purge_get_batch(q) == 8);
		basic(q, loop);
		purge_get_stats(q, &st);
		CHECK(purge_stats_format(&st, text, sizeof(text), 0) > 0);
		CHECK(purge_stats_format(&st, text, sizeof(text), PURGE_FORMAT_JSON) > 0);
		CHECK(text[0] == '{');
		CHECK(purge_queue_destroy(q) == 0);
	}

	full_queue();
	munmap(base, PAGES * pg);

	if (failures) {
		fprintf(stderr, "smoke: %d check(s) failed\n", failures);
		return 1;
	}
	printf("smoke: ok (libpurge %d, %s path)\n", purge_version(),
	       backend == PURGE_BACKEND_VECTORED ? "vectored" : "madvise loop");
	return 0;
}
