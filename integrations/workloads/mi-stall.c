/* SPDX-License-Identifier: MIT */
/*
 * mi-stall: how long another thread waits to commit memory while one thread
 * releases and collects a mimalloc heap (issue 27).  Runs under any mimalloc
 * that exports mi_collect, preloaded (stock, or patched to purge through
 * libpurge).
 *
 *   thread A: fills FILL MiB with SIZE KiB blocks (large objects: each has
 *     segment slices of its own, decommitted when it is freed; each page
 *     touched), frees every other block (scattered spans that cannot
 *     coalesce) and calls mi_collect(true);
 *   thread B: holds three BSIZE KiB blocks and frees the middle one, so the
 *     hole is a span of its own between two live ones; then loops
 *     malloc(BSIZE) (which takes the hole back and, once it was decommitted,
 *     commits it again), touches each page, frees (which decommits it
 *     again), and times each pair.
 *
 * Run it with MIMALLOC_DECOMMIT_DELAY=0: then a free decommits at once (stock
 * madvises there; the patched library queues it) and every one of B's pairs
 * commits.  At a delay, 2.0.9's mi_collect(true) does not decommit the
 * calling thread's own segments, and B reuses its block still committed.
 *
 * Prints, per repeat: A's release (the frees) and collect times in ms; B's
 * pairs that overlap the collect, and that overlap the release and collect
 * together (the purge; a pair that began before and waited into it counts
 * whole): count, p50, p99.9 and longest in microseconds; the same for the
 * pairs that lie within the 200 ms before the release (B's undisturbed
 * latency).  --trace FILE appends B's pairs from 50 ms before the release
 * to 50 ms after the collect (the repeat, the pair's start in ms since the
 * release began, its latency in us, A's phase when it began) for a plot.
 * A benchmark, not a test: it asserts nothing about times.
 *
 * usage: mi-stall [--fill MiB] [--size KiB] [--bsize KiB] [--repeat N]
 *                 [--csv] [--trace FILE]
 * Exit status: 0; 77 when the allocator has no mi_collect (not mimalloc); 2
 * for bad options; 1 when memory runs out.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

typedef void mi_collect_fn(bool force);

#define MAX_SAMPLES (1u << 22)

struct opts {
	size_t fill_mib, size_kib, bsize_kib, repeat;
	bool csv;
	const char *trace;
};

static mi_collect_fn *collect;
static size_t page;
enum { FILLING, QUIET, RELEASE, COLLECT, DONE };
static atomic_int phase; /* A's phase */
/* when A began to wait for B, to free, to collect, and was done (us); read
 * once B is joined */
static double t_quiet, t_release, t_collect, t_done;
static struct sample *samples;
static size_t nsamples;
static double *scratch;
static struct opts o = {512, 512, 192, 3, false, NULL};

static void touch(char *p, size_t len)
{
	touch_pages(p, len, page);
}

static void *thread_b(void *arg)
{
	size_t len = o.bsize_kib << 10;
	(void)arg;
	/* a hole between two live blocks: the loop's block is that span */
	char *lo = xmalloc(len), *mid = xmalloc(len), *hi = xmalloc(len);
	touch(lo, len);
	touch(hi, len);
	free(mid);
	while (atomic_load(&phase) != DONE) {
		int ph = atomic_load(&phase);
		double t0 = now_us();
		char *p = xmalloc(len);
		touch(p, len);
		free(p);
		double t1 = now_us();
		/* every pair from the quiet phase on, the one A's end finds
		 * waiting included: windows are cut by time afterwards */
		if (ph != FILLING && nsamples < MAX_SAMPLES)
			samples[nsamples++] = (struct sample){t0, t1};
	}
	free(lo);
	free(hi);
	return NULL;
}

/* B's pairs that overlap [from, to) (within it, with inside): count, p50,
 * p99.9, max. */
static void print_window(double from, double to, bool inside)
{
	print_samples(samples, nsamples, scratch, from, to, inside,
	              o.csv ? ",%zu,%.1f,%.1f,%.1f" : " %9zu %9.1f %10.1f %10.1f");
}

static void print_row(unsigned rep, double release_ms, double collect_ms)
{
	printf(o.csv ? "%u,%.2f,%.2f" : "%6u %10.2f %10.2f", rep, release_ms, collect_ms);
	print_window(t_collect, t_done, false);
	print_window(t_release, t_done, false);
	print_window(t_quiet, t_release, true);
	printf("\n");
	fflush(stdout);
}

static void write_trace(unsigned rep)
{
	FILE *f = fopen(o.trace, "a");
	if (!f) {
		perror(o.trace);
		exit(2);
	}
	for (size_t i = 0; i < nsamples; i++) {
		const struct sample *x = &samples[i];
		if (x->t1 > t_release - 50e3 && x->t0 < t_done + 50e3)
			fprintf(f, "%u,%.3f,%.1f,%s\n", rep, (x->t0 - t_release) / 1e3,
			        x->t1 - x->t0,
			        x->t0 < t_release   ? "before"
			        : x->t0 < t_collect ? "release"
			        : x->t0 < t_done    ? "collect"
			                            : "after");
	}
	fclose(f);
}

static void one_repeat(unsigned rep)
{
	size_t len = o.size_kib << 10, n = (o.fill_mib << 10) / o.size_kib;
	char **blocks = calloc(n, sizeof(*blocks));
	pthread_t b;

	nsamples = 0;
	atomic_store(&phase, FILLING);
	if (!blocks || pthread_create(&b, NULL, thread_b, NULL))
		abort();
	for (size_t i = 0; i < n; i++) {
		blocks[i] = xmalloc(len);
		touch(blocks[i], len);
	}
	t_quiet = now_us();
	atomic_store(&phase, QUIET);
	usleep(200 * 1000); /* B's undisturbed latency */
	t_release = now_us();
	atomic_store(&phase, RELEASE);
	for (size_t i = 0; i < n; i += 2)
		free(blocks[i]);
	t_collect = now_us();
	atomic_store(&phase, COLLECT);
	collect(true);
	t_done = now_us();
	atomic_store(&phase, DONE);
	pthread_join(b, NULL);
	for (size_t i = 1; i < n; i += 2)
		free(blocks[i]);
	free(blocks);
	print_row(rep, (t_collect - t_release) / 1e3, (t_done - t_collect) / 1e3);
	if (o.trace)
		write_trace(rep);
}

static void usage(int status)
{
	fprintf(status ? stderr : stdout,
	        "usage: mi-stall [--fill MiB] [--size KiB] [--bsize KiB] [--repeat N] [--csv]\n"
	        "                [--trace FILE]\n"
	        "Thread A fills --fill MiB (default 512) in --size KiB blocks (512), frees\n"
	        "every other one and calls mi_collect(true); thread B times malloc(--bsize\n"
	        "KiB (192)) + touch + free of a block between two live ones meanwhile.  Run\n"
	        "with MIMALLOC_DECOMMIT_DELAY=0.  One row a repeat (3): the release's and\n"
	        "the collect's ms; B's pairs during the collect, during release + collect,\n"
	        "and before (count, p50, p99.9, max in us).  --trace appends B's pairs\n"
	        "(repeat,ms,us,phase).  Preload the mimalloc to measure; 77 without one.\n");
	exit(status);
}

static void parse(int argc, char **argv)
{
	/* sizes above mimalloc's medium objects (128 KiB) */
	const struct stall_opt t[] = {
	    {"--fill", 16, 65536, &o.fill_mib, NULL},    {"--size", 160, 16384, &o.size_kib, NULL},
	    {"--bsize", 160, 16384, &o.bsize_kib, NULL}, {"--repeat", 1, 100, &o.repeat, NULL},
	    {"--trace", 0, 0, NULL, &o.trace},           {NULL, 0, 0, NULL, NULL}};

	stall_parse(argc, argv, t, &o.csv, usage);
}

int main(int argc, char **argv)
{
	parse(argc, argv);
	collect = (mi_collect_fn *)need_symbol("mi-stall", "mi_collect", "mimalloc");
	page = (size_t)sysconf(_SC_PAGESIZE);
	samples = malloc(MAX_SAMPLES * sizeof(*samples));
	scratch = malloc(MAX_SAMPLES * sizeof(*scratch));
	if (!samples || !scratch)
		return 1;
	printf(o.csv ? "repeat,release_ms,collect_ms,collect_n,collect_p50_us,collect_p999_us,"
	               "collect_max_us,purge_n,purge_p50_us,purge_p999_us,purge_max_us,"
	               "before_n,before_p50_us,before_p999_us,before_max_us\n"
	             : "repeat release_ms collect_ms collect_n    p50_us   p99.9_us     max_us"
	               "   purge_n    p50_us   p99.9_us     max_us  before_n    p50_us   p99.9_us"
	               "     max_us\n");
	for (unsigned r = 1; r <= o.repeat; r++)
		one_repeat(r);
	return 0;
}
