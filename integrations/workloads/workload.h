/* SPDX-License-Identifier: MIT */
/*
 * What the workloads share: the clock (bench/common/clock.h), their random
 * numbers, size arguments, short options, --help, which malloc runs, RSS
 * sampling from /proc/self/statm and the timed run (ebizzy-lite.c,
 * churn.c); touching pages, the percentiles of a sorted sample, and the
 * stall programs' options, rows and windows of samples (je-stall.c,
 * mi3-stall.c).  Plain malloc/free programs, so nothing here
 * depends on jemalloc or libpurge.
 */
#ifndef PURGE_WORKLOAD_H
#define PURGE_WORKLOAD_H

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../../bench/common/clock.h" /* now_ns() */

/* xorshift64*: s must not start at 0. */
static inline uint64_t next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* Decimal with an optional K, M or G suffix; false on anything else. */
static inline bool parse_size(const char *s, uint64_t *val)
{
	static const char units[] = "KMG";
	char *end;

	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	const char *u = *end ? strchr(units, *end & ~0x20) : NULL;
	unsigned shift = u ? 10 * (unsigned)(u - units + 1) : 0;
	if (errno || end == s || *s == '-' || (u ? end[1] : *end) || v > (UINT64_MAX >> shift))
		return false;
	*val = (uint64_t)v << shift;
	return true;
}

/* --help among the options (before a "--"): getopt() cannot take a long
 * option, and would call it an invalid option '-'. */
static inline bool wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help"))
			return true;
	return false;
}

/* One short option of the throughput programs (churn, ebizzy-lite): a
 * number (parse_size's, so K, M and G work) into an unsigned, a size_t or a
 * uint64_t, or a flag that sets a bool. */
enum wl_kind { WL_UNSIGNED, WL_SIZE, WL_U64, WL_FLAG };
struct wl_opt {
	char letter;
	enum wl_kind kind;
	void *val;
};

/* The usage text: asked for (-h, --help), to stdout and exit 0; after a
 * mistake, to stderr and exit 2. */
static inline _Noreturn void wl_usage(FILE *f, const char *text)
{
	fputs(text, f);
	exit(f == stdout ? 0 : 2);
}

/* getopt over t (ended by letter 0): -h and --help print usage (wl_usage);
 * an unknown option, a number parse_size does not take or that does not
 * fit, and an operand print it as a mistake. */
static inline void wl_parse(int argc, char **argv, const struct wl_opt *t, const char *usage)
{
	char letters[64] = "h";
	size_t n = 1;
	uint64_t v;
	int c;

	for (const struct wl_opt *x = t; x->letter && n + 3 < sizeof(letters); x++) {
		letters[n++] = x->letter;
		if (x->kind != WL_FLAG)
			letters[n++] = ':';
	}
	letters[n] = 0;
	if (wants_help(argc, argv))
		wl_usage(stdout, usage);
	while ((c = getopt(argc, argv, letters)) != -1) {
		const struct wl_opt *x = t;
		while (x->letter && x->letter != c)
			x++;
		if (c == 'h')
			wl_usage(stdout, usage);
		if (!x->letter)
			wl_usage(stderr, usage);
		if (x->kind == WL_FLAG) {
			*(bool *)x->val = true;
			continue;
		}
		if (!parse_size(optarg, &v) || (x->kind == WL_UNSIGNED && v > UINT_MAX) ||
		    (x->kind == WL_SIZE && v > SIZE_MAX))
			wl_usage(stderr, usage);
		if (x->kind == WL_UNSIGNED)
			*(unsigned *)x->val = (unsigned)v;
		else if (x->kind == WL_SIZE)
			*(size_t *)x->val = (size_t)v;
		else
			*(uint64_t *)x->val = v;
	}
	if (optind != argc)
		wl_usage(stderr, usage);
}

/* jemalloc's version when jemalloc serves malloc. */
static inline const char *malloc_name(void)
{
	int (*ctl)(const char *, void *, size_t *, void *, size_t);
	void *p = dlsym(RTLD_DEFAULT, "mallctl");
	const char *v = NULL;
	size_t len = sizeof(v);

	if (!p)
		return "not-jemalloc";
	memcpy(&ctl, &p, sizeof(ctl));
	return ctl("version", &v, &len, NULL, 0) == 0 && v ? v : "jemalloc";
}

/* ---- RSS, sampled every 10 ms by a thread of its own ------------------- */

struct rss {
	pthread_t tid;
	int fd;
	atomic_bool stop;
	uint64_t peak_pages, sum_pages, samples;
};

static inline void *rss_main(void *arg)
{
	struct rss *r = arg;
	struct timespec ts = {0, 10000000};
	char buf[128];

	while (!atomic_load(&r->stop)) {
		unsigned long long size, res;
		ssize_t n = pread(r->fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = 0;
		if (sscanf(buf, "%llu %llu", &size, &res) == 2) {
			r->peak_pages = res > r->peak_pages ? res : r->peak_pages;
			r->sum_pages += res;
			r->samples++;
		}
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static inline bool rss_start(struct rss *r)
{
	*r = (struct rss){.fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)};
	return r->fd >= 0 && pthread_create(&r->tid, NULL, rss_main, r) == 0;
}

/* Stops sampling; peak and average resident KiB. */
static inline void rss_stop(struct rss *r, uint64_t *peak_kib, uint64_t *avg_kib)
{
	uint64_t kib = (uint64_t)sysconf(_SC_PAGESIZE) / 1024;

	atomic_store(&r->stop, true);
	pthread_join(r->tid, NULL);
	close(r->fd);
	*peak_kib = r->peak_pages * kib;
	*avg_kib = r->samples ? r->sum_pages / r->samples * kib : 0;
}

/* User and system CPU seconds of the process so far; returns its maximum
 * resident set in KiB (getrusage's ru_maxrss). */
static inline long cpu_seconds(double *user, double *sys)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	*sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	return ru.ru_maxrss;
}

/* A timed run: sleep `seconds`, then raise the flag the workers poll. */
static inline void stop_after(unsigned seconds, atomic_bool *flag)
{
	struct timespec ts = {(time_t)seconds, 0};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	atomic_store(flag, true);
}

/* The timed part of a throughput workload (churn, ebizzy-lite): the wall
 * clock, RSS sampled meanwhile, the CPU time at the end. */
struct timed {
	struct rss rss;
	uint64_t t0;
	double secs, user_s, sys_s;
	uint64_t peak_kib, avg_kib;
	long maxrss_kib;
};

static inline bool timed_start(struct timed *t)
{
	if (!rss_start(&t->rss))
		return false;
	t->t0 = now_ns();
	return true;
}

static inline void timed_stop(struct timed *t)
{
	t->secs = (double)(now_ns() - t->t0) / 1e9;
	rss_stop(&t->rss, &t->peak_kib, &t->avg_kib);
	t->maxrss_kib = cpu_seconds(&t->user_s, &t->sys_s);
}

/* Runs fn on n workers, the i-th at (char *)w + i * size, each on a thread
 * of its own; after `seconds` raises *stop (0: they end by themselves);
 * joins them.  Exits when a thread cannot start. */
static inline void run_workers(void *(*fn)(void *), void *w, size_t size, unsigned n,
                               unsigned seconds, atomic_bool *stop)
{
	pthread_t *tid = calloc(n, sizeof(*tid));

	for (unsigned i = 0; tid && i < n; i++)
		if (pthread_create(&tid[i], NULL, fn, (char *)w + i * size))
			tid = NULL;
	if (!tid) {
		fprintf(stderr, "cannot start %u threads\n", n);
		exit(1);
	}
	if (seconds)
		stop_after(seconds, stop);
	for (unsigned i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	free(tid);
}

/* CLOCK_MONOTONIC in microseconds. */
static inline double now_us(void)
{
	return (double)now_ns() / 1e3;
}

/* Write one byte in each page of [p, p + len). */
static inline void touch_pages(char *p, size_t len, size_t page)
{
	for (size_t i = 0; i < len; i += page)
		p[i] = 1;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The q-th percentile (nearest rank) of v[0..n), sorted; 0 when n is 0. */
static inline double sorted_pct(const double *v, size_t n, double q)
{
	if (!n)
		return 0;
	return v[(size_t)(q / 100 * (double)(n - 1) + 0.5)];
}

/* ---- the stall programs (je-stall.c, mi3-stall.c) -------------------- */

/* One "--NAME VALUE" option: a number within [min, max] into *num, or, with
 * num NULL, the string into *str. */
struct stall_opt {
	const char *name;
	size_t min, max, *num;
	const char **str;
};

/* --csv sets *csv; -h and --help call usage(0); an option not in t (which
 * ends with a NULL name), a missing value or one out of range usage(2). */
static inline void stall_parse(int argc, char **argv, const struct stall_opt *t, bool *csv,
                               void (*usage)(int))
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--csv")) {
			*csv = true;
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			usage(0);
		if (i + 1 >= argc)
			usage(2);
		const char *v = argv[++i];
		const struct stall_opt *x = t;
		while (x->name && strcmp(a, x->name))
			x++;
		unsigned long n = strtoul(v, NULL, 10);
		if (!x->name || (x->num && (n < x->min || n > x->max))) {
			usage(2);
			return;
		}
		if (x->num)
			*x->num = n;
		else
			*x->str = v;
	}
}

/* The stall programs' rows: the header (CSV or the table's), then
 * one(1) .. one(repeat), each printing its row. */
static inline void stall_rows(bool csv, const char *csv_head, const char *table_head, size_t repeat,
                              void (*one)(unsigned))
{
	fputs(csv ? csv_head : table_head, stdout);
	for (unsigned r = 1; r <= repeat; r++)
		one(r);
}

/* malloc, or "PROGRAM: out of memory" and exit status 1. */
static inline void *xmalloc(size_t len)
{
	void *p = malloc(len);

	if (!p) {
		fprintf(stderr, "%s: out of memory\n", program_invocation_short_name);
		exit(1);
	}
	return p;
}

/* The preloaded allocator's function sym, or a SKIP line (prog: SKIP: no
 * sym: preload a who) and exit status 77. */
static inline void *need_symbol(const char *prog, const char *sym, const char *who)
{
	void *f = dlsym(RTLD_DEFAULT, sym);

	if (!f) {
		fprintf(stderr, "%s: SKIP: no %s: preload a %s\n", prog, sym, who);
		exit(77);
	}
	return f;
}

/* B's timed pairs: when one began and ended (us, CLOCK_MONOTONIC). */
struct sample {
	double t0, t1;
};

/* The pairs of s[0..n) that overlap [from, to) (lie within it, with
 * inside): count, p50, p99.9, max (us), printed with fmt; scratch holds n.
 * A pair that began before a window and ended in it counts whole: a wait
 * for the purge may begin just before it. */
static inline void print_samples(const struct sample *s, size_t n, double *scratch, double from,
                                 double to, bool inside, const char *fmt)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct sample *x = &s[i];
		if (inside ? x->t0 >= from && x->t1 <= to : x->t1 > from && x->t0 < to)
			scratch[k++] = x->t1 - x->t0;
	}
	qsort(scratch, k, sizeof(double), cmp_double);
	printf(fmt, k, sorted_pct(scratch, k, 50), sorted_pct(scratch, k, 99.9),
	       k ? scratch[k - 1] : 0);
}

#endif /* PURGE_WORKLOAD_H */
