/* SPDX-License-Identifier: MIT */
/*
 * churn: a server-like heap for the shim's measurements.  T threads own N
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
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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

struct opts {
	unsigned threads, rounds, seconds;
	size_t total, big, small;
	uint64_t seed;
};

struct worker {
	pthread_t tid;
	const struct opts *o;
	unsigned id;
	size_t first, n; /* its slots */
	uint64_t replaced;
};

static void **slot;
static atomic_bool stop_flag, sampler_stop;
static atomic_uint ready;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

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
		size_t i = w->first + (size_t)(rnd(rs) % w->n);
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

/* ---- RSS sampling, every 10 ms from /proc/self/statm ------------------ */

struct rss {
	pthread_t tid;
	int fd;
	uint64_t peak_pages, sum_pages, samples;
};

static void *sampler_main(void *arg)
{
	struct rss *r = arg;
	struct timespec ts = {0, 10000000};
	char buf[128];

	while (!atomic_load(&sampler_stop)) {
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

/* jemalloc's version when jemalloc serves malloc. */
static const char *malloc_name(void)
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

/* ---- options ---------------------------------------------------------- */

static size_t size_arg(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	const char *u = "KMG", *k = *end ? strchr(u, *end & ~0x20) : NULL;

	if (k && end[1] == 0)
		v <<= 10 * (unsigned)(k - u + 1);
	else if (*end)
		v = 0;
	return (size_t)v;
}

static void parse(int argc, char **argv, struct opts *o)
{
	int c;

	*o = (struct opts){2, 0, 5, (size_t)1 << 30, 16384, 512, 1};
	while ((c = getopt(argc, argv, "t:m:b:s:d:n:S:")) != -1) {
		switch (c) {
		case 't':
			o->threads = (unsigned)atoi(optarg);
			break;
		case 'm':
			o->total = size_arg(optarg);
			break;
		case 'b':
			o->big = size_arg(optarg);
			break;
		case 's':
			o->small = size_arg(optarg);
			break;
		case 'd':
			o->seconds = (unsigned)atoi(optarg);
			break;
		case 'n':
			o->rounds = (unsigned)atoi(optarg);
			break;
		case 'S':
			o->seed = strtoull(optarg, NULL, 10);
			break;
		default:
			goto usage;
		}
	}
	if (optind == argc && o->threads && o->total >= o->big && o->small >= 16 &&
	    o->big > o->small && o->big % 8 == 0 && o->small % 8 == 0)
		return;
usage:
	fprintf(stderr, "usage: churn [-t threads] [-m total[K|M|G]] [-b big] [-s small]\n"
	                "             [-d seconds | -n rounds] [-S seed]\n"
	                "  sizes are multiples of 8, small >= 16, big > small\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct rss r = {.fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)};
	struct rusage ru;

	parse(argc, argv, &o);
	size_t n = o.total / o.big;
	slot = calloc(n, sizeof(*slot));
	struct worker *w = calloc(o.threads, sizeof(*w));
	if (!slot || !w || r.fd < 0 || pthread_create(&r.tid, NULL, sampler_main, &r))
		return 1;
	printf("churn: malloc=%s\n", malloc_name());
	printf("churn: %u threads, %zu values of %zu bytes, replaced by %zu-byte ones and back\n",
	       o.threads, n, o.big, o.small);
	uint64_t t0 = now_ns();
	for (unsigned i = 0; i < o.threads; i++) {
		w[i] = (struct worker){.o = &o, .id = i, .first = n * i / o.threads};
		w[i].n = n * (i + 1) / o.threads - w[i].first;
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]))
			return 1;
	}
	if (!o.rounds) {
		struct timespec ts = {(time_t)o.seconds, 0};
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		atomic_store(&stop_flag, true);
	}
	uint64_t replaced = 0;
	for (unsigned i = 0; i < o.threads; i++) {
		pthread_join(w[i].tid, NULL);
		replaced += w[i].replaced;
	}
	double secs = (double)(now_ns() - t0) / 1e9;
	atomic_store(&sampler_stop, true);
	pthread_join(r.tid, NULL);
	getrusage(RUSAGE_SELF, &ru);
	uint64_t kib = (uint64_t)sysconf(_SC_PAGESIZE) / 1024;
	double user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	double sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	printf("RESULT records_per_s=%.0f chunks=%" PRIu64 " seconds=%.3f user_s=%.3f sys_s=%.3f"
	       " peak_rss_kib=%" PRIu64 " avg_rss_kib=%" PRIu64 "\n",
	       (double)replaced / secs, replaced, secs, user, sys, r.peak_pages * kib,
	       r.samples ? r.sum_pages / r.samples * kib : 0);
	free(w);
	free(slot);
	return 0;
}
