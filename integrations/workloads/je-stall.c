/* SPDX-License-Identifier: MIT */
/*
 * je-stall: how long another thread of the same jemalloc arena waits while
 * one thread purges it (issue 27).  Runs under any jemalloc that exports
 * mallctl, preloaded (stock, or patched to purge through libpurge).
 *
 *   thread A: binds itself to arena 0, fills FILL MiB with SIZE KiB blocks
 *     (each page touched), frees every other block (scattered extents that
 *     cannot coalesce) and calls mallctl("arena.0.purge");
 *   thread B: bound to arena 0 too, loops malloc(BSIZE KiB), touches each
 *     page, frees, and times each pair, from before A's purge to after it.
 *
 * Prints, per repeat, A's purge time and B's pairs during the purge: their
 * count, p50, p99.9 and longest, in microseconds, and the same for B's
 * pairs before the purge (its undisturbed latency).  Where B's time during
 * the purge went (Linux: /proc/thread-self/schedstat and getrusage): on a
 * CPU, waiting for one on a run queue (the scheduler), or asleep (blocked:
 * a lock's futex); its voluntary and involuntary context switches; and
 * when, in ms after the purge began, B's longest pair started.  A
 * benchmark, not a test: it asserts nothing about times.
 *
 * usage: je-stall [--fill MiB] [--size KiB] [--bsize KiB] [--repeat N] [--csv]
 * Exit status: 0; 77 when the allocator has no mallctl (not jemalloc); 2
 * for bad options; 1 when mallctl fails.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

typedef int mallctl_fn(const char *, void *, size_t *, void *, size_t);

#define MAX_SAMPLES (1u << 22)

struct opts {
	size_t fill_mib, size_kib, bsize_kib, repeat;
	bool csv;
};

struct window {
	double *v;
	size_t n;
};

static mallctl_fn *ctl;
static size_t page;
enum { FILLING, QUIET, PURGING, DONE };
static atomic_int phase; /* A's phase; B records QUIET and PURGING pairs */
static struct window before, during;

/* B's own time, read by B when the purge begins and when it ends. */
struct btime {
	double wall_us, cpu_ns, runq_ns;
	long nvcsw, nivcsw;
};
static struct btime b_start, b_end;
static double purge_t0;       /* when A began the purge (now_us) */
static double max_at, max_us; /* B's longest pair during it: start, length */

static void btime_read(struct btime *t)
{
	struct rusage ru;
	unsigned long long cpu = 0, runq = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	if (f) {
		if (fscanf(f, "%llu %llu", &cpu, &runq) != 2)
			cpu = runq = 0;
		fclose(f);
	}
	getrusage(RUSAGE_THREAD, &ru);
	t->wall_us = now_us();
	t->cpu_ns = (double)cpu;
	t->runq_ns = (double)runq;
	t->nvcsw = ru.ru_nvcsw;
	t->nivcsw = ru.ru_nivcsw;
}
static struct opts o = {1024, 256, 192, 3, false};

static void bind_arena0(void)
{
	unsigned zero = 0;
	if (ctl("thread.arena", NULL, NULL, &zero, sizeof(zero))) {
		fprintf(stderr, "je-stall: mallctl thread.arena failed\n");
		exit(1);
	}
}

static void touch(char *p, size_t len)
{
	touch_pages(p, len, page);
}

static void record(struct window *w, double us)
{
	if (w->n < MAX_SAMPLES)
		w->v[w->n++] = us;
}

static void *thread_b(void *arg)
{
	size_t len = o.bsize_kib << 10;
	(void)arg;
	bool started = false;
	bind_arena0();
	while (atomic_load(&phase) != DONE) {
		int ph = atomic_load(&phase);
		if (ph == PURGING && !started) {
			btime_read(&b_start); /* outside any timed pair */
			started = true;
			continue;
		}
		double t0 = now_us();
		char *p = malloc(len);
		if (!p)
			abort();
		touch(p, len);
		free(p);
		double t1 = now_us();
		if (atomic_load(&phase) != ph || ph == FILLING)
			continue; /* only pairs that lie in one phase */
		record(ph == PURGING ? &during : &before, t1 - t0);
		if (ph == PURGING && t1 - t0 > max_us) {
			max_us = t1 - t0;
			max_at = t0;
		}
	}
	btime_read(&b_end);
	if (!started)
		b_start = b_end;
	return NULL;
}

static double pct(const struct window *w, double q)
{
	return sorted_pct(w->v, w->n, q);
}

static void print_row(unsigned rep, double purge_ms)
{
	qsort(before.v, before.n, sizeof(double), cmp_double);
	qsort(during.v, during.n, sizeof(double), cmp_double);
	double wall = (b_end.wall_us - b_start.wall_us) / 1e3;
	double cpu = (b_end.cpu_ns - b_start.cpu_ns) / 1e6;
	double runq = (b_end.runq_ns - b_start.runq_ns) / 1e6;
	double sleep = wall - cpu - runq;
	printf(o.csv ? "%u,%.2f,%zu,%.1f,%.1f,%.1f,%zu,%.1f,%.1f,%.1f,%.2f,%.2f,%.2f,%ld,%ld,%.2f\n"
	             : "%6u %10.2f %9zu %9.1f %10.1f %10.1f %9zu %9.1f %10.1f %10.1f"
	               " %8.2f %8.2f %8.2f %6ld %6ld %8.2f\n",
	       rep, purge_ms, during.n, pct(&during, 50), pct(&during, 99.9),
	       during.n ? during.v[during.n - 1] : 0, before.n, pct(&before, 50),
	       pct(&before, 99.9), before.n ? before.v[before.n - 1] : 0, cpu, runq,
	       sleep < 0 ? 0 : sleep, b_end.nvcsw - b_start.nvcsw, b_end.nivcsw - b_start.nivcsw,
	       during.n ? (max_at - purge_t0) / 1e3 : 0);
}

/* A's part of one repeat: fill, free every other block, warm B up, purge. */
static double run_a(char **blocks, size_t n)
{
	size_t len = o.size_kib << 10;
	for (size_t i = 0; i < n; i++) {
		blocks[i] = malloc(len);
		if (!blocks[i])
			abort();
		touch(blocks[i], len);
	}
	for (size_t i = 0; i < n; i += 2)
		free(blocks[i]);
	atomic_store(&phase, QUIET);
	usleep(200 * 1000); /* B's undisturbed latency */
	double t0 = now_us();
	purge_t0 = t0;
	atomic_store(&phase, PURGING);
	if (ctl("arena.0.purge", NULL, NULL, NULL, 0)) {
		fprintf(stderr, "je-stall: mallctl arena.0.purge failed\n");
		exit(1);
	}
	double ms = (now_us() - t0) / 1e3;
	atomic_store(&phase, DONE);
	for (size_t i = 1; i < n; i += 2)
		free(blocks[i]);
	return ms;
}

static void one_repeat(unsigned rep)
{
	size_t n = (o.fill_mib << 10) / o.size_kib;
	char **blocks = calloc(n, sizeof(*blocks));
	pthread_t b;

	before.n = during.n = 0;
	max_us = max_at = 0;
	atomic_store(&phase, FILLING);
	if (!blocks || pthread_create(&b, NULL, thread_b, NULL))
		abort();
	double ms = run_a(blocks, n);
	pthread_join(b, NULL);
	free(blocks);
	print_row(rep, ms);
}

static void usage(int status)
{
	fprintf(status ? stderr : stdout,
	        "usage: je-stall [--fill MiB] [--size KiB] [--bsize KiB] [--repeat N] [--csv]\n"
	        "Thread A fills --fill MiB (default 1024) in --size KiB blocks (256), frees\n"
	        "every other one and calls mallctl(\"arena.0.purge\"); thread B, on the same\n"
	        "arena, times malloc(--bsize KiB (192)) + touch + free meanwhile.  One row a\n"
	        "repeat (3): the purge's ms; B's pairs during it (count, p50, p99.9, max in\n"
	        "us); the same before it.  Preload the jemalloc to measure; 77 without one.\n");
	exit(status);
}

static void parse(int argc, char **argv)
{
	const struct stall_opt t[] = {{"--fill", 16, 65536, &o.fill_mib, NULL},
	                              {"--size", 16, 65536, &o.size_kib, NULL},
	                              {"--bsize", 16, 65536, &o.bsize_kib, NULL},
	                              {"--repeat", 1, 100, &o.repeat, NULL},
	                              {NULL, 0, 0, NULL, NULL}};

	stall_parse(argc, argv, t, &o.csv, usage);
}

int main(int argc, char **argv)
{
	parse(argc, argv);
	ctl = (mallctl_fn *)need_symbol("je-stall", "mallctl", "jemalloc");
	page = (size_t)sysconf(_SC_PAGESIZE);
	before.v = malloc(MAX_SAMPLES * sizeof(double));
	during.v = malloc(MAX_SAMPLES * sizeof(double));
	if (!before.v || !during.v)
		return 1;
	bind_arena0();
	stall_rows(o.csv,
	           "repeat,purge_ms,during_n,during_p50_us,during_p999_us,during_max_us,"
	           "before_n,before_p50_us,before_p999_us,before_max_us,"
	           "b_cpu_ms,b_runq_ms,b_sleep_ms,b_nvcsw,b_nivcsw,max_at_ms\n",
	           "repeat   purge_ms  during_n   p50_us   p99.9_us     max_us  before_n"
	           "    p50_us   p99.9_us     max_us   cpu_ms  runq_ms sleep_ms  nvcsw nivcsw"
	           " max_at_ms\n",
	           o.repeat, one_repeat);
	return 0;
}
