/* SPDX-License-Identifier: MIT */
/*
 * queue-bench: the cost of the calls around the flush, through the public
 * API, at small and large queues (n scattered pages pending, every other
 * page of a region, enqueued in random order):
 *
 *   enqueue      ns per purge_enqueue (no flush inside the timing)
 *   enqueue-aged the same into a queue with max_delay_ns (an hour), which
 *                reads the clock and keeps an age per range
 *   index        ns per pending range for the first cancel after n
 *                enqueues, which indexes them (once per batch of enqueues)
 *   cancel-hit   ns per purge_cancel of a pending page
 *   cancel-miss  ns per purge_cancel of a page between pending ones
 *   reuse        ns per enqueue of a new page plus cancel of a pending
 *                one, n staying pending (an allocator's free and reuse)
 *   flush        ns per range for the purge_flush that empties the queue
 *                after those (its pages were never touched: the library's
 *                share of a flush, with the kernel's cheapest)
 *   flush-huge   the same for n enqueues into a PURGE_HUGE queue
 *   memory       bytes a range: purge_queue_bytes(n), and of it what a queue
 *                writes (resident afterwards) for n enqueues and a flush,
 *                then with one cancel among them (the index and age list)
 *   split        the split-heavy pattern (--split): one long range cut by
 *                single-page cancels into n parts that fill the queue's
 *                pool (capacity 8n/9 and its spare room), then, per step, one part
 *                cancelled whole and the long tail split again; ns per
 *                cancel of those steps (batch 1, n parts staying pending)
 *
 *   huge-*       (--huge SIZE) a PURGE_HUGE flush of two one-page ranges,
 *                at the two ends of a sparse heap of SIZE (MAP_NORESERVE,
 *                one page written in every huge-page frame, so that each
 *                has a page table), against the same two pages side by
 *                side, for purge_flush (which counts the frames it splits)
 *                and purge_flush_to (the frame plan); ns per flush
 *
 * Each is timed over a batch of --ops calls, --repeat times: median and
 * p10-p90.  --latency times single purge_enqueue calls of a steady stream
 * into a queue of --capacity, with and without PURGE_INCREMENTAL, against
 * one raw process_madvise call of `batch` pages, the bound the flag aims at.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "purge.h"
#include "syscall.h"

#define MAX_SIZES 8

static size_t page;

struct opts {
	size_t sizes[MAX_SIZES], nsizes;
	size_t splits[MAX_SIZES], nsplits;
	unsigned repeat, ops, capacity, stream;
	bool latency;
	size_t huge; /* bytes of sparse heap for the huge-* rows; 0: none */
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void shuffle(size_t *a, size_t n, uint64_t seed)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = rnd(&seed) % i, t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* p in [0, 1] of v[0..n), sorted in place. */
static double pct(uint64_t *v, size_t n, double p)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return (double)v[(size_t)(p * (double)(n - 1) + 0.5)];
}

static void die(const char *what, int err)
{
	fprintf(stderr, "queue-bench: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

/* Every result is checked, as an allocator must check it (purge.h), but
 * after the timed loop: `bad |= ret < 0` costs no branch inside it. */
static void check(int bad, const char *what)
{
	if (bad) {
		fprintf(stderr, "queue-bench: %s failed\n", what);
		exit(1);
	}
}

static void *reserve(size_t bytes, int prot)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	void *p = mmap(NULL, bytes, prot, flags, -1, 0);

	if (p == MAP_FAILED)
		die("mmap", errno);
	return p;
}

/* ---- the per-call costs ------------------------------------------------- */

struct bed {
	char *r;      /* 2n pages of address space, PROT_NONE: nothing is touched */
	size_t n;     /* pages pending: the even ones */
	size_t *perm; /* the even pages in random order */
	purge_queue *q;
	purge_queue *aged; /* the same with max_delay_ns: ages kept */
	purge_queue *huge; /* the same with PURGE_HUGE */
};

static char *pg(const struct bed *b, size_t i)
{
	return b->r + i * page;
}

static void fill_into(struct bed *b, purge_queue *q)
{
	for (size_t i = 0; i < b->n; i++)
		if (purge_enqueue(q, pg(b, 2 * b->perm[i]), page))
			die("purge_enqueue", EINVAL);
}

static void fill(struct bed *b)
{
	fill_into(b, b->q);
}

/* ops distinct random pending pages (even) or pages between them (odd),
 * drawn before the timing starts.  Distinct: a page put back twice would
 * be an overlapping enqueue, which purge_cancel scans apart. */
static size_t *draw(const struct bed *b, unsigned ops, uint64_t *seed, bool odd)
{
	size_t *k = malloc(b->n * sizeof(*k));

	for (size_t i = 0; i < b->n; i++)
		k[i] = i;
	shuffle(k, b->n, rnd(seed));
	for (unsigned i = 0; i < ops; i++)
		k[i] = 2 * k[i] + odd;
	return k;
}

/* ns per call: ops cancels of pending pages, put back untimed (and indexed,
 * with a cancel that misses, before the next batch). */
static double cancel_hit(struct bed *b, unsigned ops, uint64_t *seed)
{
	size_t *k = draw(b, ops, seed, false);
	int bad = 0;
	uint64_t t0 = now_ns();
	for (unsigned i = 0; i < ops; i++)
		bad |= purge_cancel(b->q, pg(b, k[i]), page) < 0;
	uint64_t t = now_ns() - t0;
	for (unsigned i = 0; i < ops; i++)
		bad |= purge_enqueue(b->q, pg(b, k[i]), page) < 0;
	bad |= purge_cancel(b->q, pg(b, 1), page) < 0;
	check(bad, "purge_cancel or purge_enqueue");
	free(k);
	return (double)t / ops;
}

static double cancel_miss(struct bed *b, unsigned ops, uint64_t *seed)
{
	size_t *k = draw(b, ops, seed, true);
	int bad = 0;
	uint64_t t0 = now_ns();
	for (unsigned i = 0; i < ops; i++)
		bad |= purge_cancel(b->q, pg(b, k[i]), page) < 0;
	uint64_t t = now_ns() - t0;
	check(bad, "purge_cancel");
	free(k);
	return (double)t / ops;
}

/* Reuse a pending page (cancel), free it again (enqueue): n stays pending,
 * and every cancel first indexes the page enqueued before it. */
static double reuse(struct bed *b, unsigned ops, uint64_t *seed)
{
	size_t *k = draw(b, ops, seed, false);
	int bad = 0;
	uint64_t t0 = now_ns();
	for (unsigned i = 0; i < ops; i++) {
		bad |= purge_cancel(b->q, pg(b, k[i]), page) < 0;
		bad |= purge_enqueue(b->q, pg(b, k[i]), page) < 0;
	}
	uint64_t t = now_ns() - t0;
	check(bad, "purge_cancel or purge_enqueue");
	free(k);
	return (double)t / ops;
}

enum { M_ENQ, M_AGED, M_INDEX, M_HIT, M_MISS, M_REUSE, M_FLUSH, M_FLUSH_HUGE, M_KINDS };
static const char *const names[M_KINDS] = {"enqueue",     "enqueue-aged", "index", "cancel-hit",
                                           "cancel-miss", "reuse",        "flush", "flush-huge"};

/* One repeat on the queue: fill it, then each measurement once, then
 * empty it (untimed). */
static void one_pass(struct bed *b, unsigned ops, uint64_t *seed, double *out)
{
	shuffle(b->perm, b->n, rnd(seed));
	uint64_t t0 = now_ns();
	fill(b);
	out[M_ENQ] = (double)(now_ns() - t0) / b->n;
	t0 = now_ns();
	fill_into(b, b->aged);
	out[M_AGED] = (double)(now_ns() - t0) / b->n;
	purge_flush(b->aged);
	t0 = now_ns();
	int ret = purge_cancel(b->q, pg(b, 1), page); /* misses, but indexes everything */
	out[M_INDEX] = (double)(now_ns() - t0) / b->n;
	check(ret < 0, "purge_cancel");
	out[M_HIT] = cancel_hit(b, ops, seed);
	out[M_MISS] = cancel_miss(b, ops, seed);
	out[M_REUSE] = reuse(b, ops, seed);
	t0 = now_ns();
	ret = purge_flush(b->q);
	out[M_FLUSH] = (double)(now_ns() - t0) / b->n;
	fill_into(b, b->huge);
	t0 = now_ns();
	ret |= purge_flush(b->huge);
	out[M_FLUSH_HUGE] = (double)(now_ns() - t0) / b->n;
	check(ret < 0, "purge_flush");
}

static void measure(size_t n, const struct opts *o)
{
	struct bed b = {.n = n, .perm = malloc(n * sizeof(size_t))};
	uint64_t *v[M_KINDS], seed = 0x9e3779b97f4a7c15ull ^ n;

	b.r = reserve(2 * n * page, PROT_NONE);
	for (size_t i = 0; i < n; i++)
		b.perm[i] = i;
	for (int m = 0; m < M_KINDS; m++)
		v[m] = malloc(o->repeat * sizeof(uint64_t));
	/* one queue for all repeats, as an allocator keeps its own; a first
	 * pass, not counted, faults its memory in */
	struct purge_config cfg = {.capacity = (unsigned)n + 64};
	if (purge_queue_create(&b.q, &cfg))
		die("purge_queue_create", ENOMEM);
	cfg.max_delay_ns = 3600 * 1000000000ull;
	if (purge_queue_create(&b.aged, &cfg))
		die("purge_queue_create", ENOMEM);
	cfg.max_delay_ns = 0;
	cfg.flags = PURGE_HUGE;
	if (purge_queue_create(&b.huge, &cfg))
		die("purge_queue_create", ENOMEM);
	/* at most an eighth of the queue: n stays about the same */
	unsigned ops = o->ops < n / 8 ? o->ops : (unsigned)(n / 8);
	for (unsigned r = 0; r <= o->repeat; r++) {
		double out[M_KINDS];
		one_pass(&b, ops, &seed, out);
		for (int m = 0; m < M_KINDS && r > 0; m++)
			v[m][r - 1] = (uint64_t)(out[m] * 10);
	}
	purge_queue_destroy(b.q);
	purge_queue_destroy(b.aged);
	purge_queue_destroy(b.huge);
	for (int m = 0; m < M_KINDS; m++) {
		printf("%-12s %9zu %9.1f %9.1f %9.1f\n", names[m], n,
		       pct(v[m], o->repeat, 0.5) / 10, pct(v[m], o->repeat, 0.1) / 10,
		       pct(v[m], o->repeat, 0.9) / 10);
		free(v[m]);
	}
	munmap(b.r, 2 * n * page);
	free(b.perm);
}

/* ---- memory ------------------------------------------------------------- */

/* Bytes of the queue's own mapping that are resident (written). */
static size_t resident(const void *q, size_t bytes)
{
	size_t pages = (bytes + page - 1) / page, n = 0;
	unsigned char *vec = malloc(pages);

	if (mincore((void *)q, pages * page, vec))
		die("mincore", errno);
	for (size_t i = 0; i < pages; i++)
		n += vec[i] & 1;
	free(vec);
	return n * page;
}

/* purge_queue_bytes(n) a range, and what a queue of n writes a range:
 * n scattered pages enqueued and flushed; then again with one cancel
 * first (the index and the age list). */
static void measure_memory(size_t n)
{
	struct purge_config cfg = {.capacity = (unsigned)n + 64};
	size_t bytes = purge_queue_bytes(cfg.capacity), wrote[2];
	char *r = reserve(2 * n * page, PROT_NONE);

	for (int cancel = 0; cancel < 2; cancel++) {
		purge_queue *q;
		int bad = purge_queue_create(&q, &cfg);
		size_t before = resident(q, bytes);
		for (size_t i = 0; i < n; i++)
			bad |= purge_enqueue(q, r + 2 * i * page, page);
		if (cancel)
			bad |= purge_cancel(q, r + page, page) < 0; /* between: nothing pending */
		wrote[cancel] = resident(q, bytes) - before;
		bad |= purge_flush(q) < 0 || purge_queue_destroy(q) < 0;
		if (bad)
			die("memory", EINVAL);
	}
	munmap(r, 2 * n * page);
	printf("%-12s %9zu %9.1f %9.1f %9.1f   (bytes a range: the queue, written plain, "
	       "written once it cancels)\n",
	       "memory", n, (double)bytes / n, (double)wrote[0] / n, (double)wrote[1] / n);
}

/* ---- the split-heavy pattern --------------------------------------------- */

/* n one-page parts of one range (pages 0, 2, ..., 2n-2) and its tail from
 * page 2n; each timed step cancels a random part and splits the tail. */
static double split_steps(size_t n, unsigned steps, uint64_t *seed)
{
	size_t span = 2 * n + 2 * (size_t)steps + 2;
	char *r =
	    mmap(NULL, span * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (r == MAP_FAILED)
		return -1; /* no address space for it (32-bit) */
	/* a pool (capacity plus its spare room for splits) about n pieces:
	 * the parts fill it, as in an allocator that splits long ranges */
	struct purge_config cfg = {.capacity = (unsigned)(n - n / 9), .batch = 1};
	purge_queue *q;

	if (purge_queue_create(&q, &cfg) || purge_enqueue(q, r, span * page))
		die("split set-up", EINVAL);
	int bad = 0;
	for (size_t i = 1; i < 2 * n; i += 2)
		bad |= purge_cancel(q, r + i * page, page) < 0;
	size_t *k = draw(&(struct bed){.n = n}, steps, seed, false), tail = 2 * n;
	uint64_t t0 = now_ns();
	for (unsigned i = 0; i < steps; i++, tail += 2) {
		bad |= purge_cancel(q, r + k[i] * page, page) < 0;       /* a part, whole */
		bad |= purge_cancel(q, r + (tail + 1) * page, page) < 0; /* the tail, split */
	}
	uint64_t t = now_ns() - t0;
	if (bad)
		die("split: purge_cancel", EINVAL);
	free(k);
	purge_queue_destroy(q);
	munmap(r, span * page);
	return (double)t / (2.0 * steps);
}

static void measure_split(size_t n, const struct opts *o)
{
	uint64_t *v = malloc(o->repeat * sizeof(uint64_t)), seed = 0x51ab ^ n;
	unsigned steps = o->ops < n / 8 ? o->ops : (unsigned)(n / 8);

	for (unsigned r = 0; r < o->repeat; r++) {
		double ns = split_steps(n, steps, &seed);
		if (ns < 0) {
			printf("%-12s %9zu   skipped: no room for %zu MiB of address space\n",
			       "split", n, (4 * n + 2) * page >> 20);
			free(v);
			return;
		}
		v[r] = (uint64_t)(ns * 10);
	}
	printf("%-12s %9zu %9.1f %9.1f %9.1f\n", "split", n, pct(v, o->repeat, 0.5) / 10,
	       pct(v, o->repeat, 0.1) / 10, pct(v, o->repeat, 0.9) / 10);
	free(v);
}

/* ---- PURGE_HUGE on a sparse heap ----------------------------------------- */

/* The huge-page frame size, as the library reads it. */
static size_t frame_size(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r");
	unsigned long long v = 0;

	if (f && fscanf(f, "%llu", &v) != 1)
		v = 0;
	if (f)
		fclose(f);
	return v >= page && (v & (v - 1)) == 0 ? (size_t)v : page * (page / sizeof(void *));
}

/* ns per flush of the pages at a and b (written first), median of reps. */
static double huge_flush(purge_queue *q, char *a, char *b, bool plan, unsigned reps)
{
	uint64_t *v = malloc(reps * sizeof(*v));
	int bad = 0;

	for (unsigned i = 0; i < reps; i++) {
		*a = 1, *b = 1;
		bad |= purge_enqueue(q, a, page) | purge_enqueue(q, b, page);
		uint64_t t0 = now_ns();
		bad |= (plan ? purge_flush_to(q, 0) : purge_flush(q)) < 0;
		v[i] = now_ns() - t0;
	}
	check(bad, "huge flush");
	double m = pct(v, reps, 0.5);
	free(v);
	return m;
}

static void measure_huge(const struct opts *o)
{
	size_t frame = frame_size(), span = o->huge / frame * frame;
	char *m = reserve(span + frame, PROT_READ | PROT_WRITE), *r;
	struct purge_config cfg = {.flags = PURGE_HUGE};
	purge_queue *q;
	unsigned reps = o->repeat * 16;

	r = (char *)(((uintptr_t)m + frame - 1) & ~(frame - 1));
	madvise(r, span, MADV_NOHUGEPAGE); /* small pages: every frame is scanned entry by entry */
	for (size_t off = frame / 2; off < span; off += frame)
		r[off] = 1; /* a page table for every frame, one page resident in it */
	if (purge_queue_create(&q, &cfg))
		die("purge_queue_create", ENOMEM);
	char *end = r + span - page;
	printf("\nPURGE_HUGE flush of two one-page ranges in a %zu MiB sparse heap "
	       "(%zu frames of %zu KiB, one page written in each), ns per flush, median of %u\n",
	       span >> 20, span / frame, frame >> 10, reps);
	printf("%-26s %12s %12s %8s\n", "flush", "two ends", "side by side", "ratio");
	for (int plan = 0; plan < 2; plan++) {
		double ends = huge_flush(q, r, end, plan, reps);
		double near = huge_flush(q, r, r + page, plan, reps);
		printf("%-26s %12.0f %12.0f %8.2f\n",
		       plan ? "purge_flush_to (the plan)" : "purge_flush", ends, near, ends / near);
	}
	purge_queue_destroy(q);
	munmap(m, span + frame);
}

/* ---- single-enqueue latency ---------------------------------------------- */

/* One raw process_madvise call of `batch` resident scattered pages, ns. */
static uint64_t raw_call(char *r, unsigned batch)
{
	struct iovec *iov = malloc(batch * sizeof(*iov));

	for (unsigned i = 0; i < batch; i++) {
		r[2 * i * page] = 1;
		iov[i] = (struct iovec){r + 2 * i * page, page};
	}
	uint64_t t0 = now_ns();
	ssize_t ret = purge__sys_process_madvise(iov, batch, MADV_DONTNEED);
	uint64_t t = now_ns() - t0;
	free(iov);
	return ret == (ssize_t)(batch * page) ? t : 0;
}

static void latency_row(const char *name, uint64_t *lat, size_t n, uint64_t call)
{
	double p50 = pct(lat, n, 0.5), p99 = pct(lat, n, 0.99), p999 = pct(lat, n, 0.999);
	double max = (double)lat[n - 1];

	printf("%-22s %10.0f %10.0f %10.0f %10.0f %8.2f\n", name, p50, p99, p999, max,
	       call ? max / call : 0.0);
}

/* Every page is written (resident) before it is enqueued: the flushes do
 * real work.  The stream is long enough for several automatic flushes. */
static void latency(const struct opts *o, unsigned flags, uint64_t *lat)
{
	size_t n = o->stream, span = 2 * (size_t)o->capacity + 2;
	struct purge_config cfg = {.capacity = o->capacity, .flags = flags};
	char *r = reserve(span * page, PROT_READ | PROT_WRITE);
	purge_queue *q;

	if (purge_queue_create(&q, &cfg))
		die("purge_queue_create", ENOMEM);
	for (size_t i = 0; i < n; i++) {
		char *p = r + (2 * i % span) * page;
		/* its previous round may still be pending */
		check(purge_cancel(q, p, page) < 0, "purge_cancel");
		*p = 1;
		uint64_t t0 = now_ns();
		int ret = purge_enqueue(q, p, page);
		lat[i] = now_ns() - t0;
		check(ret < 0, "purge_enqueue");
	}
	purge_queue_destroy(q);
	munmap(r, span * page);
}

static void measure_latency(const struct opts *o)
{
	uint64_t *lat = malloc(o->stream * sizeof(uint64_t)), calls[64];
	char *r = reserve(2 * PURGE_DEFAULT_BATCH * page, PROT_READ | PROT_WRITE);

	/* as many raw calls as the incremental stream makes rounds */
	for (int i = 0; i < 64; i++)
		calls[i] = raw_call(r, PURGE_DEFAULT_BATCH);
	munmap(r, 2 * PURGE_DEFAULT_BATCH * page);
	uint64_t call = (uint64_t)pct(calls, 64, 0.5), call_max = calls[63];
	printf("\nsingle purge_enqueue latency, ns: capacity %u, batch %u, %u enqueues of "
	       "resident scattered pages\n",
	       o->capacity, PURGE_DEFAULT_BATCH, o->stream);
	printf(
	    "one raw process_madvise of %u resident pages: median %llu ns, max %llu ns (of 64)\n",
	    PURGE_DEFAULT_BATCH, (unsigned long long)call, (unsigned long long)call_max);
	printf("%-22s %10s %10s %10s %10s %8s\n", "mode", "p50", "p99", "p99.9", "max", "max/call");
	latency(o, 0, lat);
	latency_row("whole flush (default)", lat, o->stream, call);
	latency(o, PURGE_INCREMENTAL, lat);
	latency_row("PURGE_INCREMENTAL", lat, o->stream, call);
	free(lat);
}

/* ---- command line -------------------------------------------------------- */

/* The "model name" line of /proc/cpuinfo, if there is one. */
static void cpu_model(char *out, size_t len)
{
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "r");

	while (f && fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ':');
		if (strncmp(line, "model name", 10) || !v)
			continue;
		snprintf(out, len, "%s", v + 2);
		out[strcspn(out, "\n")] = '\0';
		break;
	}
	if (f)
		fclose(f);
}

/* On stdout for --help, on stderr for a mistake. */
static void usage(FILE *f, const char *prog)
{
	fprintf(f,
	        "usage: %s [--n N,N...] [--repeat R] [--ops M] [--latency] [--capacity C] "
	        "[--stream S] [--huge GIB]\n"
	        "  --n        pending pages (default 1024,65536)\n"
	        "  --split    split parts for the split-heavy pattern (default 65536,1048576; "
	        "0: none)\n"
	        "  --repeat   fresh queues per size; median and p10-p90 (default 7)\n"
	        "  --ops      calls per timed batch (default 4096, at most n/8)\n"
	        "  --latency  also single-enqueue latency with and without PURGE_INCREMENTAL\n"
	        "  --capacity queue capacity for --latency (default 8192)\n"
	        "  --stream   enqueues timed for --latency (default 65536)\n"
	        "  --huge     a PURGE_HUGE flush at the two ends of a sparse heap of this\n"
	        "             many GiB (MAP_NORESERVE), against side by side (default: none)\n"
	        "  --help     this text\n",
	        prog);
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"n", 1, 0, 'n'},       {"repeat", 1, 0, 'r'},   {"ops", 1, 0, 'o'},
	    {"latency", 0, 0, 'l'}, {"capacity", 1, 0, 'c'}, {"stream", 1, 0, 's'},
	    {"split", 1, 0, 'S'},   {"huge", 1, 0, 'H'},     {"help", 0, 0, 'h'},
	    {0, 0, 0, 0},
	};
	*o = (struct opts){{1024, 65536}, 2, {65536, 1048576}, 2, 7, 4096, 8192, 65536, false, 0};
	for (int c; (c = getopt_long(argc, argv, "", lo, NULL)) != -1;) {
		char *s = optarg, *end;
		switch (c) {
		case 'n':
			for (o->nsizes = 0; s && *s && o->nsizes < MAX_SIZES;
			     s = *end ? end + 1 : end)
				o->sizes[o->nsizes++] = strtoul(s, &end, 10);
			break;
		case 'S':
			for (o->nsplits = 0; s && *s && o->nsplits < MAX_SIZES;
			     s = *end ? end + 1 : end)
				if ((o->splits[o->nsplits] = strtoul(s, &end, 10)) != 0)
					o->nsplits++;
			break;
		case 'r':
			o->repeat = (unsigned)strtoul(s, NULL, 10);
			break;
		case 'o':
			o->ops = (unsigned)strtoul(s, NULL, 10);
			break;
		case 'l':
			o->latency = true;
			break;
		case 'c':
			o->capacity = (unsigned)strtoul(s, NULL, 10);
			break;
		case 's':
			o->stream = (unsigned)strtoul(s, NULL, 10);
			break;
		case 'H':
			o->huge = (size_t)strtoull(s, NULL, 10) << 30;
			break;
		case 'h':
			usage(stdout, argv[0]);
			exit(0);
		default:
			return -1;
		}
	}
	for (size_t i = 0; i < o->nsizes; i++)
		if (o->sizes[i] < 2 || o->sizes[i] > PURGE_CAPACITY_MAX - 64)
			return -1;
	for (size_t i = 0; i < o->nsplits; i++)
		if (o->splits[i] < 16 || o->splits[i] > PURGE_CAPACITY_MAX - 64)
			return -1;
	return optind == argc && o->repeat && o->ops && o->capacity && o->stream ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct opts o;

	page = (size_t)sysconf(_SC_PAGESIZE);
	if (parse(argc, argv, &o)) {
		usage(stderr, argv[0]);
		return 2;
	}
	struct utsname u;
	char model[128] = "unknown CPU";
	uname(&u);
	cpu_model(model, sizeof(model));
	printf("queue-bench: libpurge %d, backend %s, %ld CPUs (%s), Linux %s, page %zu\n",
	       purge_version(), purge_backend(0) == PURGE_BACKEND_VECTORED ? "vectored" : "loop",
	       sysconf(_SC_NPROCESSORS_ONLN), model, u.release, page);
	printf("%-12s %9s %9s %9s %9s   (ns per call; median, p10, p90 of %u queues)\n", "call",
	       "pending", "median", "p10", "p90", o.repeat);
	for (size_t i = 0; i < o.nsizes; i++)
		measure(o.sizes[i], &o);
	for (size_t i = 0; i < o.nsizes; i++)
		measure_memory(o.sizes[i]);
	for (size_t i = 0; i < o.nsplits; i++)
		measure_split(o.splits[i], &o);
	if (o.latency)
		measure_latency(&o);
	if (o.huge)
		measure_huge(&o);
	return 0;
}
