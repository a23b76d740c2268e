/* SPDX-License-Identifier: MIT */
/*
 * stall-bench: how long another thread waits while a shared queue flushes.
 *
 * Thread A enqueues N scattered resident pages (every other page of a
 * region, so nothing coalesces) into a PURGE_LOCKED queue and calls
 * purge_flush(); thread B, meanwhile, enqueues and cancels one page of its
 * own in a loop and times each pair.  Per batch it reports B's p50, p99.9
 * and longest pair, one call's median time (process_madvise of `batch`
 * scattered resident pages, timed alone), the longest pair divided by it,
 * and A's flush time on the locked queue against the same flush on an
 * unlocked queue (what the lock handoffs cost).  Medians over --repeat
 * runs.  Run it against another build of the library with LD_LIBRARY_PATH
 * to compare (the tool uses only the 2.0 API).  No assertion on a time.
 *
 * usage: stall-bench [--pages N] [--batch 64,256,1024] [--repeat R]
 *                    [--threads T] [--csv FILE]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "purge.h"

#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#define STALL_PIDFD_SELF  -10000
#define STALL_MAX_SAMPLES (1u << 22)

static size_t page;

struct stall_opts {
	size_t pages;
	unsigned batches[8], nbatch, repeat, threads;
	const char *csv;
};

struct stall_run {
	double flush_locked_ms, flush_plain_ms, call_us;
	double b_p50_us, b_p999_us, b_max_us;
	unsigned long b_pairs;
};

static uint64_t stall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int stall_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int stall_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double stall_median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), stall_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static char *stall_map(size_t bytes)
{
	char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("stall-bench: mmap");
		exit(1);
	}
	madvise(p, bytes, MADV_NOHUGEPAGE);
	return p;
}

static void stall_touch(char *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		r[2 * i * page] = 1;
}

/* ---- thread B ------------------------------------------------------------ */

struct stall_b {
	purge_queue *q;
	char *own;
	uint64_t *ns;
	size_t n, cap;
	atomic_int phase; /* 0 wait, 1 run, 2 stop */
};

static void *stall_b_main(void *arg)
{
	struct stall_b *b = arg;

	while (atomic_load(&b->phase) == 0)
		;
	while (atomic_load(&b->phase) == 1 && b->n < b->cap) {
		uint64_t t0 = stall_now();
		int e = purge_enqueue(b->q, b->own, page);
		int c = purge_cancel(b->q, b->own, page);
		b->ns[b->n++] = stall_now() - t0;
		if (e || c < 0) {
			fprintf(stderr, "stall-bench: B: enqueue %d, cancel %d\n", e, c);
			exit(1);
		}
	}
	return NULL;
}

/* ---- one flush ----------------------------------------------------------- */

static purge_queue *stall_queue(size_t pages, unsigned batch, unsigned flags)
{
	struct purge_config cfg = {
	    .batch = batch, .capacity = (unsigned)pages + 16, .flags = flags};
	purge_queue *q;
	int ret = purge_queue_create(&q, &cfg);

	if (ret) {
		fprintf(stderr, "stall-bench: purge_queue_create: %s\n", strerror(-ret));
		exit(1);
	}
	return q;
}

static void stall_fill(purge_queue *q, char *r, size_t n)
{
	stall_touch(r, n);
	for (size_t i = 0; i < n; i++)
		if (purge_enqueue(q, r + 2 * i * page, page)) {
			fprintf(stderr, "stall-bench: enqueue failed\n");
			exit(1);
		}
}

static double stall_flush_ms(purge_queue *q)
{
	uint64_t t0 = stall_now();
	int ret = purge_flush(q);

	if (ret < 0) {
		fprintf(stderr, "stall-bench: purge_flush: %s\n", strerror(-ret));
		exit(1);
	}
	return (double)(stall_now() - t0) / 1e6;
}

#define STALL_MAX_B 64

/* B's samples, from every B thread, into one sorted array at ns. */
static size_t stall_gather(struct stall_b *b, unsigned nb, uint64_t *ns)
{
	size_t n = 0;

	for (unsigned k = 0; k < nb; k++) {
		memmove(ns + n, b[k].ns, b[k].n * sizeof(*ns));
		n += b[k].n;
	}
	qsort(ns, n, sizeof(*ns), stall_cmp_u64);
	return n;
}

/* A's flush of a locked queue while the B threads enqueue and cancel. */
static void stall_contended(const struct stall_opts *o, unsigned batch, char *r,
                            struct stall_run *out, uint64_t *ns)
{
	purge_queue *q = stall_queue(o->pages, batch, PURGE_LOCKED);
	static struct stall_b b[STALL_MAX_B];
	pthread_t t[STALL_MAX_B];
	char *own = stall_map(o->threads * page);

	stall_fill(q, r, o->pages);
	for (unsigned k = 0; k < o->threads; k++) {
		b[k] = (struct stall_b){.q = q,
		                        .own = own + k * page,
		                        .ns = ns + (size_t)k * (STALL_MAX_SAMPLES / o->threads),
		                        .cap = STALL_MAX_SAMPLES / o->threads};
		b[k].own[0] = 1;
		pthread_create(&t[k], NULL, stall_b_main, &b[k]);
		atomic_store(&b[k].phase, 1);
	}
	usleep(1000); /* the B threads are running */
	out->flush_locked_ms = stall_flush_ms(q);
	for (unsigned k = 0; k < o->threads; k++)
		atomic_store(&b[k].phase, 2);
	for (unsigned k = 0; k < o->threads; k++)
		pthread_join(t[k], NULL);
	size_t n = stall_gather(b, o->threads, ns);
	out->b_pairs = n;
	out->b_p50_us = n ? (double)ns[n / 2] / 1e3 : 0;
	out->b_p999_us = n ? (double)ns[(size_t)((double)n * 0.999)] / 1e3 : 0;
	out->b_max_us = n ? (double)ns[n - 1] / 1e3 : 0;
	purge_queue_destroy(q);
	munmap(own, o->threads * page);
}

/* The median time of one process_madvise call of `batch` scattered
 * resident pages, timed alone (no lock, no queue). */
static double stall_call_us(unsigned batch, char *r, size_t pages)
{
	static struct iovec iov[PURGE_BATCH_MAX];
	unsigned calls = (unsigned)(pages / batch) < 64 ? (unsigned)(pages / batch) : 64;
	double us[64];

	stall_touch(r, (size_t)calls * batch);
	for (unsigned c = 0; c < calls; c++) {
		for (unsigned i = 0; i < batch; i++)
			iov[i] = (struct iovec){r + 2 * ((size_t)c * batch + i) * page, page};
		uint64_t t0 = stall_now();
		long ret =
		    syscall(SYS_process_madvise, STALL_PIDFD_SELF, iov, batch, MADV_DONTNEED, 0);
		us[c] = (double)(stall_now() - t0) / 1e3;
		if (ret < 0)
			return -1; /* no process_madvise here: the queue loops */
	}
	return stall_median(us, calls);
}

static void stall_batch(const struct stall_opts *o, unsigned batch, char *r, uint64_t *ns,
                        struct stall_run *med)
{
	double v[7][64];
	struct stall_run run;

	for (unsigned k = 0; k < o->repeat; k++) {
		stall_contended(o, batch, r, &run, ns);
		purge_queue *q = stall_queue(o->pages, batch, 0);
		stall_fill(q, r, o->pages);
		run.flush_plain_ms = stall_flush_ms(q);
		purge_queue_destroy(q);
		run.call_us = stall_call_us(batch, r, o->pages);
		double row[7] = {run.flush_locked_ms, run.flush_plain_ms, run.call_us,
		                 run.b_p50_us,        run.b_p999_us,      run.b_max_us,
		                 (double)run.b_pairs};
		for (unsigned f = 0; f < 7; f++)
			v[f][k] = row[f];
	}
	med->flush_locked_ms = stall_median(v[0], o->repeat);
	med->flush_plain_ms = stall_median(v[1], o->repeat);
	med->call_us = stall_median(v[2], o->repeat);
	med->b_p50_us = stall_median(v[3], o->repeat);
	med->b_p999_us = stall_median(v[4], o->repeat);
	med->b_max_us = stall_median(v[5], o->repeat);
	med->b_pairs = (unsigned long)stall_median(v[6], o->repeat);
}

/* ---- options and output -------------------------------------------------- */

static void stall_usage(int rc)
{
	printf("usage: stall-bench [--pages N] [--batch B1,B2,...] [--repeat R] [--threads T]\n"
	       "                   [--csv FILE]\n"
	       "Thread A flushes N scattered resident pages (default 131072) from a PURGE_LOCKED\n"
	       "queue; thread B enqueues and cancels a page of its own meanwhile.  Prints B's\n"
	       "p50, p99.9 and longest wait, one call's median, and A's flush against an\n"
	       "unlocked queue's; medians of R runs (default 5) per batch (default 64,256,1024).\n"
	       "--threads T: T threads do what B does (default 1); their waits count together.\n");
	exit(rc);
}

static void stall_parse_batches(struct stall_opts *o, char *s)
{
	o->nbatch = 0;
	for (char *t = strtok(s, ","); t && o->nbatch < 8; t = strtok(NULL, ",")) {
		long b = strtol(t, NULL, 10);
		if (b < 1 || b > PURGE_BATCH_MAX)
			stall_usage(2);
		o->batches[o->nbatch++] = (unsigned)b;
	}
}

static void stall_parse(struct stall_opts *o, int argc, char **argv)
{
	*o = (struct stall_opts){
	    .pages = 131072, .batches = {64, 256, 1024}, .nbatch = 3, .repeat = 5, .threads = 1};
	for (int i = 1; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			stall_usage(0);
		if (!v)
			stall_usage(2);
		if (!strcmp(a, "--pages"))
			o->pages = strtoul(v, NULL, 10);
		else if (!strcmp(a, "--batch"))
			stall_parse_batches(o, argv[i + 1]);
		else if (!strcmp(a, "--repeat"))
			o->repeat = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--threads"))
			o->threads = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--csv"))
			o->csv = v;
		else
			stall_usage(2);
	}
	if (o->pages < 1024 || o->pages > (1u << 24) || o->repeat < 1 || o->repeat > 64 ||
	    o->threads < 1 || o->threads > STALL_MAX_B)
		stall_usage(2);
}

static void stall_row(FILE *f, bool csv, unsigned batch, const struct stall_run *m)
{
	double ratio = m->call_us > 0 ? m->b_max_us / m->call_us : 0;
	double cost = m->flush_plain_ms > 0 ? m->flush_locked_ms / m->flush_plain_ms : 0;

	fprintf(f,
	        csv ? "%u,%.2f,%.2f,%.3f,%.1f,%.2f,%.1f,%.1f,%.1f,%lu\n"
	            : "%6u %10.2f %10.2f %9.3f %10.1f %8.2f %9.1f %9.1f %8.1f %8lu\n",
	        batch, m->flush_locked_ms, m->flush_plain_ms, cost, m->call_us, m->b_p50_us,
	        m->b_p999_us, m->b_max_us, ratio, m->b_pairs);
}

int main(int argc, char **argv)
{
	struct stall_opts o;
	double load[3] = {0};

	page = (size_t)sysconf(_SC_PAGESIZE);
	stall_parse(&o, argc, argv);
	char *r = stall_map(2 * o.pages * page);
	uint64_t *ns = (uint64_t *)stall_map(STALL_MAX_SAMPLES * sizeof(uint64_t));
	FILE *csv = o.csv ? fopen(o.csv, "w") : NULL;
	getloadavg(load, 3);
	printf("stall-bench: libpurge %d, %zu scattered pages, %u runs a batch, %u B threads, "
	       "%ld CPUs, load %.2f %.2f %.2f\n",
	       purge_version(), o.pages, o.repeat, o.threads, sysconf(_SC_NPROCESSORS_ONLN),
	       load[0], load[1], load[2]);
	printf("%6s %10s %10s %9s %10s %8s %9s %9s %8s %8s\n", "batch", "flush_ms", "unlocked",
	       "cost", "call_us", "B_p50_us", "B_p999_us", "B_max_us", "max/call", "B_pairs");
	if (csv)
		fprintf(csv, "batch,flush_ms,unlocked_flush_ms,cost,call_us,b_p50_us,b_p999_us,"
		             "b_max_us,max_per_call,b_pairs\n");
	for (unsigned k = 0; k < o.nbatch; k++) {
		struct stall_run m;
		stall_batch(&o, o.batches[k], r, ns, &m);
		stall_row(stdout, false, o.batches[k], &m);
		if (csv)
			stall_row(csv, true, o.batches[k], &m);
	}
	getloadavg(load, 3);
	printf("load after: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
	if (csv)
		fclose(csv);
	return 0;
}
