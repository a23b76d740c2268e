/* SPDX-License-Identifier: MIT */
/*
 * mi3-stall: Bun's report against mimalloc v3 (Bun #42571; issue 38): one
 * thread frees a large heap in scattered runs and forces a collect, while
 * another thread allocates, or forces a collect of its own.  Runs under any
 * mimalloc that exports mi_collect, preloaded (stock v3.4.3 or the batched
 * purge series).
 *
 *   thread A: fills --fill MiB (768) with --size KiB blocks (1024: each a
 *     page of its own in v3, so a free gives its slices back to the arena),
 *     writes them, waits 100 ms, frees every other block (--fill/2 MiB in
 *     scattered runs that cannot coalesce) and calls mi_collect(true): the
 *     collect frees the empty pages and runs a forced purge pass under v3's
 *     purge_guard;
 *   thread B, --b alloc (the default): loops allocating --bcount (8) blocks
 *     of --bsize KiB (1024), touching each page, and freeing them; each
 *     loop is timed.  A purge pass claims the free ranges it purges, so
 *     while a pass holds them B must take other memory;
 *   thread B, --b collect: fills --fill/2 MiB of its own (before A fills,
 *     so below A's heap in the arena, where A's pass looks first); 1 ms into A's
 *     collect it frees every other block and calls mi_collect(true): stock
 *     v3 skips a purge that finds the purge_guard taken, so B's freed
 *     memory stays resident until a later pass;
 *   --b none: A alone (the scatter: the collect's time and calls).
 *   a sampler thread reads /proc/self/statm every ms from A's release to
 *     300 ms after the last collect returns (it never calls malloc).
 *
 * One row per repeat: A's release and collect (ms, and A's CPU ms in the
 * collect); B's loops that overlap
 * A's collect (count, p50, p99.9, longest in us) and B's loops in the
 * 100 ms before the release (the same); B's collect (ms, --b collect); the
 * resident set (MiB) before the release, its peak during release and
 * collects, right after the last collect, and 300 ms later (no call into
 * the allocator meanwhile), and the reference: after both threads called
 * mi_collect(true) once more, one at a time (what their collects purge when
 * they do not meet; rss_later - rss_ref is what a skipped purge left
 * resident); B's minor faults in its loops that overlap the collect, the
 * faults and CPU time of the longest of them, and the most time one of them
 * spent off CPU (print_bwork).  --rss FILE appends the samples
 * (repeat,ms since the release,MiB).  A benchmark, not a test: it asserts
 * nothing.
 *
 * usage: mi3-stall [--fill MiB] [--size KiB] [--b alloc|collect|none]
 *                  [--bsize KiB] [--bcount N] [--repeat N] [--csv]
 *                  [--rss FILE]
 * Exit status: 0; 77 when the allocator has no mi_collect; 2 for bad
 * options; 1 when memory runs out.
 */
#include <dlfcn.h>
#include <fcntl.h>
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

typedef void mi_collect_fn(bool force);

#define MAX_SAMPLES (1u << 21)
#define MAX_RSS     (1u << 16)

enum { B_ALLOC, B_COLLECT, B_NONE };
enum { FILLING, QUIET, RELEASE, COLLECT, DONE };

struct opts {
	size_t fill_mib, size_kib, bsize_kib, bcount;
	int b;
	size_t repeat;
	bool csv;
	const char *rss;
};

static struct opts o = {768, 1024, 1024, 8, B_ALLOC, 5, false, NULL};
static mi_collect_fn *collect;
static size_t page;
static atomic_int phase;
static atomic_bool b_ready, b_final, sampling;
static double t_quiet, t_release, t_collect, t_done, tb_collect, tb_done;
static double
    cpu_collect; /* A's CPU time in its collect (us): less sensitive to load than the wall time */
static struct sample *samples;
struct bwork {
	long faults; /* B's minor faults in the loop (getrusage, this thread) */
	double cpu;  /* B's CPU time in the loop (us) */
};
static struct bwork *bwork;
static size_t nsamples;
static double *scratch;
static struct {
	double t, mib;
} rss[MAX_RSS];
static size_t nrss;
static int statm;

static double rss_mib(void)
{
	char buf[128];
	unsigned long long size, res;
	ssize_t n = pread(statm, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = 0;
	if (sscanf(buf, "%llu %llu", &size, &res) != 2)
		return 0;
	return (double)res * (double)page / (1024.0 * 1024.0);
}

static void *sampler(void *arg)
{
	struct timespec ts = {0, 1000000};
	(void)arg;
	while (atomic_load(&sampling)) {
		if (nrss < MAX_RSS) {
			rss[nrss].t = now_us();
			rss[nrss].mib = rss_mib();
			nrss++;
		}
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static double thread_cpu_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static long thread_minflt(void)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_minflt;
}

/* What B did in its loops that overlap A's collect: its minor faults in all
 * of them; the faults and CPU time of the longest one (a loop whose CPU
 * time is its wall time ran: it refaulted memory a purge took, or the VM
 * stalled it); and the longest time a loop spent off CPU (wall - CPU: B
 * waited, for a lock or for the CPU) */
static void print_bwork(double from, double to)
{
	long faults = 0, max_faults = 0;
	double longest = -1, max_cpu = 0, max_wait = 0;
	for (size_t i = 0; i < nsamples; i++) {
		const struct sample *x = &samples[i];
		double wall = x->t1 - x->t0;
		if (x->t1 <= from || x->t0 >= to)
			continue;
		faults += bwork[i].faults;
		if (wall - bwork[i].cpu > max_wait)
			max_wait = wall - bwork[i].cpu;
		if (wall > longest) {
			longest = wall;
			max_faults = bwork[i].faults;
			max_cpu = bwork[i].cpu;
		}
	}
	printf(o.csv ? ",%ld,%ld,%.1f,%.1f" : " %8ld %8ld %9.1f %9.1f", faults, max_faults, max_cpu,
	       max_wait);
}

static void fill(char **blocks, size_t n, size_t len)
{
	for (size_t i = 0; i < n; i++) {
		blocks[i] = xmalloc(len);
		touch_pages(blocks[i], len, page);
	}
}

static void *thread_b(void *arg)
{
	(void)arg;
	if (o.b == B_COLLECT) {
		size_t len = o.size_kib << 10, n = (o.fill_mib << 10) / o.size_kib / 2;
		char **blocks = xmalloc(n * sizeof(*blocks));
		fill(blocks, n, len);
		atomic_store(&b_ready, true);
		while (atomic_load(&phase) < COLLECT)
			;
		usleep(1000);
		for (size_t i = 0; i < n; i += 2)
			free(blocks[i]);
		tb_collect = now_us();
		collect(true);
		tb_done = now_us();
		while (atomic_load(&phase) < DONE)
			usleep(1000);
		collect(true); /* the reference: B's purge, uncontended */
		atomic_store(&b_final, true);
		for (size_t i = 1; i < n; i += 2)
			free(blocks[i]);
		free(blocks);
		return NULL;
	}
	size_t len = o.bsize_kib << 10;
	char **mine = xmalloc(o.bcount * sizeof(*mine));
	atomic_store(&b_ready, true);
	while (atomic_load(&phase) != DONE) {
		int ph = atomic_load(&phase);
		long f0 = thread_minflt();
		double c0 = thread_cpu_us(), t0 = now_us();
		fill(mine, o.bcount, len);
		for (size_t i = 0; i < o.bcount; i++)
			free(mine[i]);
		double t1 = now_us();
		if (ph != FILLING && nsamples < MAX_SAMPLES) {
			bwork[nsamples].faults = thread_minflt() - f0;
			bwork[nsamples].cpu = thread_cpu_us() - c0;
			samples[nsamples++] = (struct sample){t0, t1};
		}
	}
	free(mine);
	return NULL;
}

/* B's loops that overlap [from, to) (inside: lie within it) */
static void print_window(double from, double to, bool inside)
{
	print_samples(samples, nsamples, scratch, from, to, inside,
	              o.csv ? ",%zu,%.1f,%.1f,%.1f" : " %7zu %8.1f %9.1f %9.1f");
}

static void one_repeat(unsigned rep)
{
	size_t len = o.size_kib << 10, n = (o.fill_mib << 10) / o.size_kib;
	char **blocks = xmalloc(n * sizeof(*blocks));
	pthread_t b, s;
	bool with_b = o.b != B_NONE;

	nsamples = 0;
	nrss = 0;
	tb_collect = tb_done = 0;
	atomic_store(&phase, FILLING);
	atomic_store(&b_ready, false);
	atomic_store(&b_final, false);
	if (with_b && pthread_create(&b, NULL, thread_b, NULL))
		abort();
	/* --b collect: B's heap first, below A's, so that A's pass has visited
	 * B's ranges before B frees them */
	while (o.b == B_COLLECT && !atomic_load(&b_ready))
		usleep(1000);
	fill(blocks, n, len);
	while (with_b && !atomic_load(&b_ready))
		usleep(1000);
	t_quiet = now_us();
	atomic_store(&phase, QUIET);
	usleep(100 * 1000);
	double rss_before = rss_mib();
	atomic_store(&sampling, true);
	if (pthread_create(&s, NULL, sampler, NULL))
		abort();
	t_release = now_us();
	atomic_store(&phase, RELEASE);
	for (size_t i = 0; i < n; i += 2)
		free(blocks[i]);
	t_collect = now_us();
	atomic_store(&phase, COLLECT);
	double c0 = thread_cpu_us();
	collect(true);
	cpu_collect = thread_cpu_us() - c0;
	t_done = now_us();
	/* wait for B's collect (--b collect) before the end of the window */
	while (o.b == B_COLLECT && tb_done == 0)
		usleep(100);
	double last = t_done > tb_done ? t_done : tb_done;
	double rss_after = rss_mib();
	usleep(300 * 1000);
	double rss_later = rss_mib();
	atomic_store(&sampling, false);
	pthread_join(s, NULL);
	/* the reference: what forced collects purge when nobody else purges */
	collect(true);
	atomic_store(&phase, DONE);
	while (o.b == B_COLLECT && !atomic_load(&b_final))
		usleep(100);
	double rss_ref = rss_mib();
	if (with_b)
		pthread_join(b, NULL);
	double peak = 0;
	for (size_t i = 0; i < nrss; i++)
		if (rss[i].t <= last && rss[i].mib > peak)
			peak = rss[i].mib;

	printf(o.csv ? "%u,%.2f,%.2f,%.2f" : "%6u %10.2f %10.2f %9.2f", rep,
	       (t_collect - t_release) / 1e3, (t_done - t_collect) / 1e3, cpu_collect / 1e3);
	print_window(t_collect, t_done, false);
	print_window(t_quiet, t_release, true);
	printf(o.csv ? ",%.2f,%.1f,%.1f,%.1f,%.1f,%.1f" : " %9.2f %9.1f %9.1f %9.1f %9.1f %9.1f",
	       tb_done ? (tb_done - tb_collect) / 1e3 : 0, rss_before, peak, rss_after, rss_later,
	       rss_ref);
	print_bwork(t_collect, t_done);
	printf("\n");
	fflush(stdout);
	if (o.rss) {
		FILE *f = fopen(o.rss, "a");
		if (!f) {
			perror(o.rss);
			exit(2);
		}
		for (size_t i = 0; i < nrss; i++)
			fprintf(f, "%u,%.3f,%.1f\n", rep, (rss[i].t - t_release) / 1e3, rss[i].mib);
		fclose(f);
	}
	for (size_t i = 1; i < n; i += 2)
		free(blocks[i]);
	free(blocks);
	collect(true);
}

static void usage(int status)
{
	fprintf(status ? stderr : stdout,
	        "usage: mi3-stall [--fill MiB] [--size KiB] [--b alloc|collect|none]\n"
	        "                 [--bsize KiB] [--bcount N] [--repeat N] [--csv] [--rss FILE]\n"
	        "Thread A fills --fill MiB (768) in --size KiB blocks (1024), frees every\n"
	        "other one and calls mi_collect(true).  Thread B meanwhile allocates and\n"
	        "frees --bcount (8) blocks of --bsize KiB (1024) in a timed loop (alloc), or\n"
	        "frees half of its own heap and calls mi_collect(true) 1 ms into A's (collect),\n"
	        "or is not there (none).  One row a repeat (5): A's release and collect ms\n"
	        "(and A's CPU ms in the collect);\n"
	        "B's loops during the collect and before (count, p50, p99.9, max in us); B's\n"
	        "collect ms; RSS MiB before, peak, right after the collects, 300 ms later, and\n"
	        "after one more uncontended mi_collect(true) of each thread (the reference).\n"
	        "Preload the mimalloc to measure; 77 without one.\n");
	exit(status);
}

static void parse(int argc, char **argv)
{
	const char *b = NULL;
	const struct stall_opt t[] = {{"--fill", 16, 65536, &o.fill_mib, NULL},
	                              {"--size", 64, 65536, &o.size_kib, NULL},
	                              {"--bsize", 1, 65536, &o.bsize_kib, NULL},
	                              {"--bcount", 1, 4096, &o.bcount, NULL},
	                              {"--repeat", 1, 100, &o.repeat, NULL},
	                              {"--rss", 0, 0, NULL, &o.rss},
	                              {"--b", 0, 0, NULL, &b},
	                              {NULL, 0, 0, NULL, NULL}};

	stall_parse(argc, argv, t, &o.csv, usage);
	if (!b)
		return;
	if (!strcmp(b, "alloc"))
		o.b = B_ALLOC;
	else if (!strcmp(b, "collect"))
		o.b = B_COLLECT;
	else if (!strcmp(b, "none"))
		o.b = B_NONE;
	else
		usage(2);
}

int main(int argc, char **argv)
{
	parse(argc, argv);
	collect = (mi_collect_fn *)need_symbol("mi3-stall", "mi_collect", "mimalloc");
	page = (size_t)sysconf(_SC_PAGESIZE);
	statm = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	samples = malloc(MAX_SAMPLES * sizeof(*samples));
	scratch = malloc(MAX_SAMPLES * sizeof(*scratch));
	bwork = malloc(MAX_SAMPLES * sizeof(*bwork));
	if (statm < 0 || !samples || !scratch || !bwork)
		return 1;
	stall_rows(o.csv,
	           "repeat,release_ms,collect_ms,collect_cpu_ms,b_n,b_p50_us,b_p999_us,b_max_us,"
	           "before_n,before_p50_us,before_p999_us,before_max_us,b_collect_ms,"
	           "rss_before_mib,rss_peak_mib,rss_after_mib,rss_later_mib,rss_ref_mib,"
	           "b_faults,b_max_faults,b_max_cpu_us,b_max_wait_us\n",
	           "repeat release_ms collect_ms  cpu_ms     b_n  b_p50us b_p999us  b_maxus"
	           "  befor_n  p50_us  p999_us   max_us b_coll_ms rss_befor  rss_peak"
	           " rss_after rss_later   rss_ref b_faults bmax_flt bmax_cpuus bmax_wait\n",
	           o.repeat, one_repeat);
	return 0;
}
