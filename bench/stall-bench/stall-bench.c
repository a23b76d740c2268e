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
 * unlocked queue (what the lock handoffs cost).  Only B's pairs that start
 * during A's flush count, and A starts once each B has made one pair (B's
 * first cancel indexes A's whole store: a cost of the cancel, O(n) once,
 * not a wait for the flush).  Two more runs a batch separate the library
 * from the machine: the same flush of an unlocked queue under the bench's
 * own mutex (purge_set_lock, 2.3: left out, n/a, with an older library),
 * timing the longest stretch A holds it (the library's own holds, plus
 * A's preemptions while it holds); and B on a queue of its own while A
 * flushes another (B's floor: what sharing two CPUs costs, with no lock
 * in common).  Medians over --repeat runs.  Built against another tree
 * of the library, it compares (it needs only the 2.0 API, and 2.3's
 * purge_set_lock as a weak symbol).  No assertion on a time.
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

#include "../common/clock.h"
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

/* One batch's figures (medians over the runs); see stall_row. */
enum {
	F_FLUSH, /* A's flush of the PURGE_LOCKED queue, B meanwhile */
	F_PLAIN, /* the same flush of an unlocked queue, no B */
	F_CALL,  /* one call's median, alone */
	F_P50,   /* B's pairs during the PURGE_LOCKED flush */
	F_P999,
	F_MAX,
	F_PAIRS,
	F_OWN_MAX, /* B's longest under the bench's own lock (purge_set_lock) */
	F_HOLD,    /* A's longest hold of that lock (wall: A's preemptions too) */
	F_FLOOR,   /* B's longest on a queue of its own while A flushes another */
	F_N
};
struct stall_run {
	double f[F_N];
};

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

/* ---- a lock of the bench's own (purge_set_lock) ------------------------- */

/* The mutex of an unlocked queue shared through purge_set_lock; it times
 * how long thread A (the flusher) holds it at a stretch. */
struct stall_lock {
	pthread_mutex_t m;
	pthread_t a;
	atomic_bool timing;
	uint64_t since, longest;
};

static void stall_lock_take(void *arg)
{
	struct stall_lock *l = arg;

	pthread_mutex_lock(&l->m);
	if (atomic_load(&l->timing) && pthread_equal(pthread_self(), l->a))
		l->since = now_ns();
}

static void stall_lock_give(void *arg)
{
	struct stall_lock *l = arg;

	if (atomic_load(&l->timing) && pthread_equal(pthread_self(), l->a)) {
		uint64_t held = now_ns() - l->since;
		l->longest = held > l->longest ? held : l->longest;
	}
	pthread_mutex_unlock(&l->m);
}

/* purge_set_lock is 2.3's: built against an older header, or run with an
 * older library (a weak reference), the own-lock run is left out (n/a). */
#if PURGE_VERSION >= 20300 || defined(STALL_SET_LOCK)
#pragma weak purge_set_lock
static bool stall_can_share(void)
{
	return purge_set_lock != NULL;
}

static int stall_share(purge_queue *q, struct stall_lock *lk)
{
	struct purge_lock pl = {stall_lock_take, stall_lock_give, lk};

	return purge_set_lock(q, &pl);
}
#else
static bool stall_can_share(void)
{
	return false;
}

static int stall_share(purge_queue *q, struct stall_lock *lk)
{
	(void)q, (void)lk;
	return -ENOSYS;
}
#endif

/* ---- thread B ------------------------------------------------------------ */

struct stall_b {
	purge_queue *q;
	struct stall_lock *lk; /* the queue's own lock, or NULL */
	char *own;
	uint64_t *ns, *at; /* each pair's time, and when it started */
	size_t n, cap;
	atomic_int phase;  /* 0 wait, 1 run, 2 stop */
	atomic_bool ready; /* made its first pair */
};

static void stall_b_pair(struct stall_b *b)
{
	if (b->lk)
		stall_lock_take(b->lk);
	int e = purge_enqueue(b->q, b->own, page);
	int c = purge_cancel(b->q, b->own, page);
	if (b->lk)
		stall_lock_give(b->lk);
	if (e || c < 0) {
		fprintf(stderr, "stall-bench: B: enqueue %d, cancel %d\n", e, c);
		exit(1);
	}
}

static void *stall_b_main(void *arg)
{
	struct stall_b *b = arg;

	while (atomic_load(&b->phase) == 0)
		;
	while (atomic_load(&b->phase) == 1 && b->n < b->cap) {
		uint64_t t0 = now_ns();
		stall_b_pair(b);
		b->at[b->n] = t0;
		b->ns[b->n++] = now_ns() - t0;
		atomic_store(&b->ready, true);
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

/* A's flush; when = its start and end. */
static double stall_flush_ms(purge_queue *q, uint64_t when[2])
{
	when[0] = now_ns();
	int ret = purge_flush(q);

	when[1] = now_ns();
	if (ret < 0) {
		fprintf(stderr, "stall-bench: purge_flush: %s\n", strerror(-ret));
		exit(1);
	}
	return (double)(when[1] - when[0]) / 1e6;
}

#define STALL_MAX_B 64

/* B's pairs that started during A's flush [t0, t1), from every B thread,
 * into one sorted array at ns (before B's own: they are packed in place).
 * A pair that started before the flush is not a wait for the flush: the
 * first cancel of B's also indexes A's whole store (store.h: O(n) once). */
static size_t stall_gather(struct stall_b *b, unsigned nb, uint64_t *ns, uint64_t t0, uint64_t t1)
{
	size_t n = 0;

	for (unsigned k = 0; k < nb; k++)
		for (size_t i = 0; i < b[k].n; i++)
			if (b[k].at[i] >= t0 && b[k].at[i] < t1)
				ns[n++] = b[k].ns[i];
	qsort(ns, n, sizeof(*ns), stall_cmp_u64);
	return n;
}

/* How A and B share (or do not share) a queue in one run. */
enum stall_mode {
	STALL_LOCKED, /* one PURGE_LOCKED queue */
	STALL_OWN,    /* one unlocked queue under the bench's mutex (purge_set_lock) */
	STALL_APART,  /* A flushes its own queue, B uses another: B's floor */
};

/* What B saw during one flush of A's. */
struct stall_seen {
	double flush_ms, p50_us, p999_us, max_us, hold_us;
	unsigned long pairs;
};

/* A's queue for a mode, and B's (the same one but in STALL_APART). */
static purge_queue *stall_queues(enum stall_mode m, unsigned batch, size_t pages,
                                 struct stall_lock *lk, purge_queue **qb)
{
	purge_queue *q = stall_queue(pages, batch, m == STALL_LOCKED ? PURGE_LOCKED : 0);

	*qb = m == STALL_APART ? stall_queue(1024, batch, PURGE_LOCKED) : q;
	if (m == STALL_OWN && stall_share(q, lk)) {
		fprintf(stderr, "stall-bench: purge_set_lock failed\n");
		exit(1);
	}
	return q;
}

/* Starts the B threads on qb and waits until each has made a pair: B's
 * first cancel also indexes A's whole store (O(n) once, store.h), which is
 * not a wait for the flush. */
static void stall_start_b(const struct stall_opts *o, struct stall_b *b, pthread_t *t,
                          purge_queue *qb, struct stall_lock *lk, char *own, uint64_t *ns)
{
	size_t per = STALL_MAX_SAMPLES / o->threads;

	for (unsigned k = 0; k < o->threads; k++) {
		b[k] = (struct stall_b){.q = qb,
		                        .lk = lk,
		                        .own = own + k * page,
		                        .ns = ns + k * per,
		                        .at = ns + STALL_MAX_SAMPLES + k * per,
		                        .cap = per};
		b[k].own[0] = 1;
		pthread_create(&t[k], NULL, stall_b_main, &b[k]);
		atomic_store(&b[k].phase, 1);
	}
	for (unsigned k = 0; k < o->threads; k++)
		while (!atomic_load(&b[k].ready))
			usleep(100);
}

/* A's flush of its queue (under the bench's lock in STALL_OWN, timing its
 * holds), B's pairs meanwhile. */
static void stall_run_a(purge_queue *q, struct stall_lock *lk, enum stall_mode m, uint64_t when[2],
                        struct stall_seen *out)
{
	if (m == STALL_OWN) {
		lk->a = pthread_self();
		atomic_store(&lk->timing, true);
		stall_lock_take(lk);
	}
	out->flush_ms = stall_flush_ms(q, when);
	if (m == STALL_OWN) {
		stall_lock_give(lk);
		atomic_store(&lk->timing, false);
		out->hold_us = (double)lk->longest / 1e3;
	}
}

/* One run: A flushes N scattered pages while the B threads enqueue and
 * cancel; ns holds 2 * STALL_MAX_SAMPLES. */
static void stall_contended(const struct stall_opts *o, unsigned batch, char *r, enum stall_mode m,
                            uint64_t *ns, struct stall_seen *out)
{
	static struct stall_b b[STALL_MAX_B];
	static struct stall_lock lk = {.m = PTHREAD_MUTEX_INITIALIZER};
	pthread_t t[STALL_MAX_B];
	uint64_t when[2];
	char *own = stall_map(o->threads * page);
	purge_queue *qb, *q = stall_queues(m, batch, o->pages, &lk, &qb);

	lk.longest = 0;
	*out = (struct stall_seen){.hold_us = -1};
	stall_fill(q, r, o->pages);
	stall_start_b(o, b, t, qb, m == STALL_OWN ? &lk : NULL, own, ns);
	stall_run_a(q, &lk, m, when, out);
	for (unsigned k = 0; k < o->threads; k++)
		atomic_store(&b[k].phase, 2);
	for (unsigned k = 0; k < o->threads; k++)
		pthread_join(t[k], NULL);
	size_t n = stall_gather(b, o->threads, ns, when[0], when[1]);
	out->pairs = n;
	out->p50_us = n ? (double)ns[n / 2] / 1e3 : 0;
	out->p999_us = n ? (double)ns[(size_t)((double)n * 0.999)] / 1e3 : 0;
	out->max_us = n ? (double)ns[n - 1] / 1e3 : 0;
	if (qb != q)
		purge_queue_destroy(qb);
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
		uint64_t t0 = now_ns();
		long ret =
		    syscall(SYS_process_madvise, STALL_PIDFD_SELF, iov, batch, MADV_DONTNEED, 0);
		us[c] = (double)(now_ns() - t0) / 1e3;
		if (ret < 0)
			return -1; /* no process_madvise here: the queue loops */
	}
	return stall_median(us, calls);
}

/* One run of each kind; r[F_HOLD] and r[F_OWN_MAX] are -1 without
 * purge_set_lock. */
static void stall_once(const struct stall_opts *o, unsigned batch, char *r, uint64_t *ns, double *f)
{
	struct stall_seen lk, own = {.max_us = -1, .hold_us = -1}, apart;
	uint64_t when[2];

	stall_contended(o, batch, r, STALL_LOCKED, ns, &lk);
	if (stall_can_share())
		stall_contended(o, batch, r, STALL_OWN, ns, &own);
	stall_contended(o, batch, r, STALL_APART, ns, &apart);
	purge_queue *q = stall_queue(o->pages, batch, 0);
	stall_fill(q, r, o->pages);
	f[F_PLAIN] = stall_flush_ms(q, when);
	purge_queue_destroy(q);
	f[F_CALL] = stall_call_us(batch, r, o->pages);
	f[F_FLUSH] = lk.flush_ms;
	f[F_P50] = lk.p50_us;
	f[F_P999] = lk.p999_us;
	f[F_MAX] = lk.max_us;
	f[F_PAIRS] = (double)lk.pairs;
	f[F_OWN_MAX] = own.max_us;
	f[F_HOLD] = own.hold_us;
	f[F_FLOOR] = apart.max_us;
}

static void stall_batch(const struct stall_opts *o, unsigned batch, char *r, uint64_t *ns,
                        struct stall_run *med)
{
	double v[F_N][64];

	for (unsigned k = 0; k < o->repeat; k++) {
		double f[F_N];
		stall_once(o, batch, r, ns, f);
		for (unsigned i = 0; i < F_N; i++)
			v[i][k] = f[i];
	}
	for (unsigned i = 0; i < F_N; i++)
		med->f[i] = stall_median(v[i], o->repeat);
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
	       "Only B's pairs that start during the flush count.  own_B_max and A_hold_us:\n"
	       "the same with an unlocked queue under the bench's mutex (purge_set_lock), and\n"
	       "the longest stretch A held it (hold/c: over one call).  floor_us: B's longest\n"
	       "on a queue of its own while A flushes another (what the CPUs alone cost).\n"
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
	const double *v = m->f;
	double call = v[F_CALL] > 0 ? v[F_CALL] : 0;
	double ratio = call ? v[F_MAX] / call : 0,
	       cost = v[F_PLAIN] > 0 ? v[F_FLUSH] / v[F_PLAIN] : 0;
	double hold = call && v[F_HOLD] >= 0 ? v[F_HOLD] / call : -1;

	fprintf(f,
	        csv ? "%u,%.2f,%.2f,%.3f,%.1f,%.2f,%.1f,%.1f,%.1f,%.0f,%.1f,%.1f,%.2f,%.1f\n"
	            : "%6u %9.2f %9.2f %6.3f %8.1f %8.2f %9.1f %9.1f %8.1f %8.0f %9.1f %9.1f %7.2f "
	              "%9.1f\n",
	        batch, v[F_FLUSH], v[F_PLAIN], cost, v[F_CALL], v[F_P50], v[F_P999], v[F_MAX],
	        ratio, v[F_PAIRS], v[F_OWN_MAX], v[F_HOLD], hold, v[F_FLOOR]);
}

static void stall_header(FILE *out, FILE *csv)
{
	fprintf(out, "%6s %9s %9s %6s %8s %8s %9s %9s %8s %8s %9s %9s %7s %9s\n", "batch",
	        "flush_ms", "unlocked", "cost", "call_us", "B_p50_us", "B_p999_us", "B_max_us",
	        "max/call", "B_pairs", "own_B_max", "A_hold_us", "hold/c", "floor_us");
	if (csv)
		fprintf(csv, "batch,flush_ms,unlocked_flush_ms,cost,call_us,b_p50_us,b_p999_us,"
		             "b_max_us,max_per_call,b_pairs,own_lock_b_max_us,a_hold_max_us,"
		             "hold_per_call,b_floor_max_us\n");
}

int main(int argc, char **argv)
{
	struct stall_opts o;
	double load[3] = {0};

	page = (size_t)sysconf(_SC_PAGESIZE);
	stall_parse(&o, argc, argv);
	char *r = stall_map(2 * o.pages * page);
	uint64_t *ns = (uint64_t *)stall_map(2 * STALL_MAX_SAMPLES * sizeof(uint64_t));
	FILE *csv = o.csv ? fopen(o.csv, "w") : NULL;
	getloadavg(load, 3);
	printf("stall-bench: libpurge %d, %zu scattered pages, %u runs a batch, %u B threads, "
	       "%ld CPUs, load %.2f %.2f %.2f\n",
	       purge_version(), o.pages, o.repeat, o.threads, sysconf(_SC_NPROCESSORS_ONLN),
	       load[0], load[1], load[2]);
	stall_header(stdout, csv);
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
