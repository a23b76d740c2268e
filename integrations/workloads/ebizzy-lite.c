/* SPDX-License-Identifier: MIT */
/*
 * ebizzy-lite: an allocator-bound workload in the spirit of ebizzy.
 *
 * T threads each keep `live` chunks of about S bytes.  Every iteration
 * replaces one of them: check the old chunk's canaries and free it, malloc a
 * new one, fill it with sorted records, then look up random keys in it.
 * With live = 1 that is allocate, fill, search, free, over and over.
 *
 * Only malloc/free are used, so any allocator can be preloaded.  Reports
 * records/s (lookups per second), chunks/s, peak and average RSS sampled
 * from /proc/self/statm, and, under jemalloc, its own madvise count.
 *
 * Every record carries a value derived from its key and the chunk's seed,
 * so a purge that hit live memory (the page reads back as zeros) shows up
 * as a bad record: lookups check what they touch, -V checks everything.
 */
#include <inttypes.h>
#include <sys/utsname.h>

#include "workload.h"

#define MAGIC_HEAD 0x6562697a7a79686full /* "ebizzyho" */
#define MAGIC_TAIL 0x6562697a7a797466ull

struct opts {
	unsigned threads, live, jitter, searches, seconds;
	uint64_t iterations; /* per thread; 0 = run for `seconds` */
	size_t chunk;
	uint64_t seed;
	bool verify, calloc, grow;
};

struct rec {
	uint64_t key, val;
};

struct head {
	uint64_t magic, size, seed, nrec;
};

struct worker {
	unsigned id;
	const struct opts *o;
	uint64_t chunks, lookups, found;
};

static atomic_bool stop_flag;

/* ---- numbers --------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* ---- chunks ---------------------------------------------------------- */

static struct rec *recs(struct head *h)
{
	return (struct rec *)(h + 1);
}

static uint64_t *tail(struct head *h)
{
	return (uint64_t *)((char *)h + h->size) - 1;
}

static uint64_t key_of(uint64_t seed, uint64_t i)
{
	/* sorted by construction: index in the high bits, noise in the low */
	return (i << 8) | (mix(seed + i) & 0xff);
}

static uint64_t val_of(uint64_t seed, uint64_t key)
{
	return mix(key ^ seed);
}

_Noreturn static void corrupt(const struct head *h, const char *what, uint64_t i)
{
	fprintf(stderr,
	        "ebizzy-lite: CANARY FAILED: chunk %p size %" PRIu64 ": %s (record %" PRIu64 ")\n",
	        (const void *)h, h->size, what, i);
	_exit(2);
}

static void fill(struct head *h, size_t size, uint64_t seed)
{
	struct rec *r = recs(h);

	h->magic = MAGIC_HEAD;
	h->size = size;
	h->seed = seed;
	h->nrec = (size - sizeof(*h) - sizeof(uint64_t)) / sizeof(*r);
	for (uint64_t i = 0; i < h->nrec; i++) {
		r[i].key = key_of(seed, i);
		r[i].val = val_of(seed, r[i].key);
	}
	*tail(h) = MAGIC_TAIL ^ seed;
}

static void check_record(struct head *h, uint64_t i)
{
	const struct rec *r = &recs(h)[i];

	if (r->key != key_of(h->seed, i) || r->val != val_of(h->seed, r->key))
		corrupt(h, "record does not match its key", i);
}

/* Canaries always; every record with -V. */
static void verify(struct head *h, bool all)
{
	if (h->magic != MAGIC_HEAD)
		corrupt(h, "head magic", 0);
	if (*tail(h) != (MAGIC_TAIL ^ h->seed))
		corrupt(h, "tail magic", h->nrec);
	uint64_t step = all ? 1 : h->nrec / 61 + 1;
	for (uint64_t i = 0; i < h->nrec; i += step)
		check_record(h, i);
}

/* Binary search for a random key; a hit is checked against its value. */
static bool lookup(struct head *h, uint64_t *rng)
{
	const struct rec *r = recs(h);
	uint64_t want = next(rng) % (h->nrec << 8), lo = 0, hi = h->nrec;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (r[mid].key < want) {
			lo = mid + 1;
		} else if (r[mid].key > want) {
			hi = mid;
		} else {
			if (r[mid].val != val_of(h->seed, want))
				corrupt(h, "looked-up record", mid);
			return true;
		}
	}
	return false;
}

/* ---- threads --------------------------------------------------------- */

static size_t chunk_size(const struct opts *o, uint64_t *rng)
{
	size_t s = o->chunk;

	if (o->jitter) {
		uint64_t pct = 100 - o->jitter + next(rng) % (2 * o->jitter + 1);
		s = (size_t)((uint64_t)s * pct / 100);
	}
	s &= ~(size_t)15;
	return s < 4096 ? 4096 : s;
}

_Noreturn static void oom(const char *what, size_t size)
{
	fprintf(stderr, "ebizzy-lite: %s(%zu) failed\n", what, size);
	_exit(1);
}

/* -z: calloc must hand out zeros; with -V every word is checked, which is
 * how a wrong "this extent is zeroed" claim inside the allocator shows. */
static struct head *get(const struct opts *o, size_t size)
{
	struct head *h = o->calloc ? calloc(1, size) : malloc(size);

	if (!h)
		oom(o->calloc ? "calloc" : "malloc", size);
	if (o->calloc && o->verify) {
		const uint64_t *w = (const uint64_t *)h;
		for (size_t i = 0; i < size / sizeof(*w); i++)
			if (w[i]) {
				fprintf(stderr,
				        "ebizzy-lite: CANARY FAILED: calloc(%zu) = %p: word %zu"
				        " is not zero\n",
				        size, (void *)h, i);
				_exit(2);
			}
	}
	return h;
}

/* -g: build the chunk in two steps, half then realloc to full, so the
 * allocator grows extents in place; the first half must survive. */
static struct head *grow(const struct opts *o, size_t size, uint64_t seed)
{
	size_t half = (size / 2) & ~(size_t)15;
	struct head *h = get(o, half);

	fill(h, half, seed);
	h = realloc(h, size);
	if (!h)
		oom("realloc", size);
	verify(h, o->verify);
	return h;
}

static void one_iteration(struct worker *w, struct head **slot, uint64_t *rng)
{
	const struct opts *o = w->o;

	if (*slot) {
		verify(*slot, o->verify);
		free(*slot);
	}
	size_t size = chunk_size(o, rng);
	uint64_t seed = next(rng);
	struct head *h = o->grow ? grow(o, size, seed) : get(o, size);
	fill(h, size, seed);
	for (unsigned i = 0; i < o->searches; i++)
		w->found += lookup(h, rng);
	w->lookups += o->searches;
	w->chunks++;
	*slot = h;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	uint64_t rng = mix(o->seed * 1000003u + w->id) | 1;
	struct head **slots = calloc(o->live, sizeof(*slots));

	if (!slots)
		return NULL;
	for (uint64_t n = 0; o->iterations ? n < o->iterations : !atomic_load(&stop_flag); n++)
		one_iteration(w, &slots[next(&rng) % o->live], &rng);
	for (unsigned i = 0; i < o->live; i++) {
		if (slots[i]) {
			verify(slots[i], o->verify);
			free(slots[i]);
		}
	}
	free(slots);
	return NULL;
}

/* ---- allocator introspection (optional symbols) ---------------------- */

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);

static void *sym(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

/* jemalloc's own count of purge madvise calls, all arenas merged. */
static int64_t je_nmadvise(void)
{
	void *p = sym("mallctl");
	mallctl_fn ctl;
	uint64_t epoch = 1, d = 0, m = 0;
	size_t len = sizeof(uint64_t);

	if (!p)
		return -1;
	memcpy(&ctl, &p, sizeof(ctl));
	ctl("epoch", NULL, NULL, &epoch, sizeof(epoch));
	if (ctl("stats.arenas.4096.dirty_nmadvise", &d, &len, NULL, 0))
		return -1;
	len = sizeof(uint64_t);
	ctl("stats.arenas.4096.muzzy_nmadvise", &m, &len, NULL, 0);
	return (int64_t)(d + m);
}

/* ---- command line ---------------------------------------------------- */

static const char usage[] =
    "usage: ebizzy-lite [-t threads] [-s chunk_bytes[K|M]] [-l live_chunks]\n"
    "       [-j jitter_pct] [-r lookups_per_chunk] [-d seconds | -n iterations]\n"
    "       [-S seed] [-V] [-z] [-g]\n"
    "  -V check every record before free   -z calloc (checked zero with -V)\n"
    "  -g grow each chunk by realloc from half size   -h, --help this text\n"
    "Exit status: 0; 1 out of memory; 2 bad arguments, or a damaged record\n"
    "or canary (CANARY FAILED on stderr).\n";

static void parse(int argc, char **argv, struct opts *o)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	const struct wl_opt t[] = {
	    {'t', WL_UNSIGNED, &o->threads},  {'s', WL_SIZE, &o->chunk},
	    {'l', WL_UNSIGNED, &o->live},     {'j', WL_UNSIGNED, &o->jitter},
	    {'r', WL_UNSIGNED, &o->searches}, {'d', WL_UNSIGNED, &o->seconds},
	    {'n', WL_U64, &o->iterations},    {'S', WL_U64, &o->seed},
	    {'V', WL_FLAG, &o->verify},       {'z', WL_FLAG, &o->calloc},
	    {'g', WL_FLAG, &o->grow},         {0, WL_FLAG, NULL}};

	*o = (struct opts){.threads = cpus > 0 ? (unsigned)cpus : 1,
	                   .live = 1,
	                   .searches = 2000,
	                   .seconds = 5,
	                   .chunk = 5u << 20,
	                   .seed = 1};
	wl_parse(argc, argv, t, usage);
	if (!o->threads || !o->live || o->jitter > 90 || o->chunk < 4096)
		wl_usage(stderr, usage);
}

/* ---- main ------------------------------------------------------------ */

static void print_header(const struct opts *o)
{
	struct utsname u;

	uname(&u);
	printf("ebizzy-lite: threads=%u chunk=%zu live=%u jitter=%u lookups=%u %s=%" PRIu64
	       " seed=%" PRIu64 " verify=%d calloc=%d grow=%d\n",
	       o->threads, o->chunk, o->live, o->jitter, o->searches,
	       o->iterations ? "iterations" : "seconds",
	       o->iterations ? o->iterations : (uint64_t)o->seconds, o->seed, o->verify, o->calloc,
	       o->grow);
	printf("ebizzy-lite: malloc=%s kernel=%s %s cpus=%ld\n", malloc_name(), u.release,
	       u.machine, sysconf(_SC_NPROCESSORS_ONLN));
}

int main(int argc, char **argv)
{
	struct opts o;
	struct timed t;

	parse(argc, argv, &o);
	print_header(&o);
	fflush(stdout);
	struct worker *w = calloc(o.threads, sizeof(*w));
	if (!w)
		return 1;
	for (unsigned i = 0; i < o.threads; i++)
		w[i] = (struct worker){.id = i, .o = &o};
	if (!timed_start(&t))
		return 1;
	run_workers(worker_main, w, sizeof(*w), o.threads, o.iterations ? 0 : o.seconds,
	            &stop_flag);
	timed_stop(&t);

	uint64_t chunks = 0, lookups = 0, found = 0;
	for (unsigned i = 0; i < o.threads; i++) {
		chunks += w[i].chunks;
		lookups += w[i].lookups;
		found += w[i].found;
	}
	double secs = t.secs;
	printf("records/s: %.0f\n", (double)lookups / secs);
	printf("RESULT records_per_s=%.0f chunks_per_s=%.1f chunks=%" PRIu64 " found=%" PRIu64
	       " seconds=%.3f user_s=%.3f sys_s=%.3f peak_rss_kib=%" PRIu64 " avg_rss_kib=%" PRIu64
	       " maxrss_kib=%ld je_nmadvise=%" PRId64 "\n",
	       (double)lookups / secs, (double)chunks / secs, chunks, found, secs, t.user_s,
	       t.sys_s, t.peak_kib, t.avg_kib, t.maxrss_kib, je_nmadvise());
	free(w);
	return 0;
}
