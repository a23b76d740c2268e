/* SPDX-License-Identifier: MIT */
/*
 * libpurge_jemalloc.so: preload it with the unmodified jemalloc 5.x and the
 * pages jemalloc releases are purged in batches by libpurge instead of one
 * madvise() per extent.
 *
 *   LD_PRELOAD="libpurge_jemalloc.so libjemalloc.so.2" program
 *
 * Setup (constructor): find jemalloc's mallctl, build the pool and a
 * PURGE_LOCKED queue, then install the hooks on every automatic arena.
 * See README.md beside this file for why each jemalloc setting is needed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim.h"

#define EXPORT __attribute__((visibility("default")))

/* Pool array slots (32 bytes each, mmap'ed, touched only as used). */
#define POOL_SLOTS (1u << 16)

struct shim shim = {.pool_lock = PTHREAD_MUTEX_INITIALIZER};

/*
 * jemalloc reads `malloc_conf` when it initialises, which can be before any
 * constructor runs.  Its own definition is weak and is looked up through the
 * GOT, so this one wins when the shim comes first in LD_PRELOAD; MALLOC_CONF
 * is read afterwards and overrides it.  Why these values: README.md.
 */
EXPORT const char *malloc_conf = "retain:false,dirty_decay_ms:0,muzzy_decay_ms:0";

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
static mallctl_fn je_ctl;

static struct {
	bool active;
	bool retain;     /* opt.retain as jemalloc runs */
	unsigned hooked; /* arenas that got our hooks */
	unsigned nauto;  /* opt.narenas */
	bool huge;       /* the oversize arena was among them */
	char version[64];
} info;

/* ---- queue glue used by the hooks -------------------------------------- */

uint64_t shim_flushes(void)
{
	struct purge_stats st;

	purge_get_stats(shim.q, &st);
	return st.flushes;
}

void shim_cancel(void *addr, size_t len)
{
	if (shim.cfg.check)
		check_cancel(shim.q, addr, len);
	else
		purge_cancel(shim.q, addr, len);
}

void shim_unmap(uintptr_t s, uintptr_t e)
{
	/* cancel first: a purge flushed after munmap could hit a new mapping
	 * that reuses these addresses */
	shim_cancel((void *)s, e - s);
	munmap((void *)s, e - s);
	atomic_fetch_add_explicit(&shim.ct.munmaps, 1, memory_order_relaxed);
}

/* Runs inside a flush, queue lock held: the pool lock nests inside it. */
static void on_failure(void *arg, void *addr, size_t len, int err)
{
	(void)arg;
	(void)err;
	atomic_fetch_add(&shim.fail_seq, 1);
	atomic_fetch_add_explicit(&shim.ct.failures, 1, memory_order_relaxed);
	pthread_mutex_lock(&shim.pool_lock);
	pool_mark_dirty(&shim.pool, (uintptr_t)addr, (uintptr_t)addr + len);
	pthread_mutex_unlock(&shim.pool_lock);
}

/* ---- settings ---------------------------------------------------------- */

/* stderr without stdio buffers (may run late in exit, or in a constructor). */
static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		(void)!write(2, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* Decimal with an optional K/M/G suffix; false on junk. */
static bool parse_size(const char *s, uint64_t *val)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned shift = 0;
	const char *units = "KMG", *u = *end ? strchr(units, *end & ~0x20) : NULL;
	if (u) {
		shift = 10 * (unsigned)(u - units + 1);
		end++;
	}
	if (errno || *end || v > (UINT64_MAX >> shift))
		return false;
	*val = (uint64_t)v << shift;
	return true;
}

static void env_size(const char *name, uint64_t lo, uint64_t hi, uint64_t *field)
{
	const char *e = getenv(name);
	uint64_t v;

	if (!e)
		return;
	if (parse_size(e, &v) && v >= lo && v <= hi)
		*field = v;
	else
		out("purge_jemalloc: ignoring %s=%s\n", name, e);
}

static bool env_flag(const char *name)
{
	const char *e = getenv(name);

	return e && *e && strcmp(e, "0") != 0;
}

/* Defaults: README.md, "Settings". */
static void read_config(struct shim_config *c)
{
	uint64_t ranges = 64, bytes = 64 << 20, delay_ms = 1000, pool_max = (uint64_t)1 << 30;

	env_size("PURGE_JEMALLOC_MAX_RANGES", 1, 1u << 20, &ranges);
	env_size("PURGE_JEMALLOC_MAX_BYTES", 0, SIZE_MAX, &bytes);
	env_size("PURGE_JEMALLOC_MAX_DELAY_MS", 0, UINT64_MAX / 1000000, &delay_ms);
	env_size("PURGE_JEMALLOC_POOL_MAX", 0, SIZE_MAX, &pool_max);
	c->max_ranges = (unsigned)ranges;
	c->max_bytes = (size_t)bytes;
	c->max_delay_ns = delay_ms * 1000000;
	c->pool_max = (size_t)pool_max;
	c->advice = MADV_DONTNEED;
	const char *adv = getenv("PURGE_JEMALLOC_ADVICE");
	if (adv && !strcmp(adv, "free"))
		c->advice = MADV_FREE;
	else if (adv && strcmp(adv, "dontneed"))
		out("purge_jemalloc: ignoring PURGE_JEMALLOC_ADVICE=%s\n", adv);
	c->check = env_flag("PURGE_JEMALLOC_CHECK");
	c->stats = env_flag("PURGE_JEMALLOC_STATS");
}

static int setup_queue(void)
{
	struct purge_config qc = {
	    .advice = shim.cfg.advice,
	    .capacity = shim.cfg.max_ranges,
	    .max_pending_bytes = shim.cfg.max_bytes,
	    .max_delay_ns = shim.cfg.max_delay_ns,
	    .flags = PURGE_LOCKED,
	    .on_failure = on_failure,
	};
	struct purge_stats st;
	int ret = purge_queue_create(&shim.q, &qc);

	if (ret)
		return ret;
	purge_get_stats(shim.q, &st);
	shim.zeroing = st.zeroed;
	return 0;
}

/* ---- finding jemalloc and hooking its arenas --------------------------- */

/* The mallctl of the jemalloc that actually serves malloc(), or NULL. */
static mallctl_fn find_jemalloc(void)
{
	void *ctl = dlsym(RTLD_DEFAULT, "mallctl");
	Dl_info di;
	mallctl_fn fn;

	if (!ctl || !dladdr(ctl, &di))
		return NULL;
	void *self = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (!self)
		return NULL;
	bool serves = dlsym(self, "malloc") == dlsym(RTLD_DEFAULT, "malloc");
	dlclose(self);
	if (!serves)
		return NULL;
	memcpy(&fn, &ctl, sizeof(fn));
	return fn;
}

static bool read_ctl(const char *name, void *val, size_t len)
{
	size_t got = len;

	return je_ctl(name, val, &got, NULL, 0) == 0 && got == len;
}

static int set_hooks(unsigned arena)
{
	char name[48];
	struct je_hooks *h = &shim_hooks;

	snprintf(name, sizeof(name), "arena.%u.extent_hooks", arena);
	return je_ctl(name, NULL, NULL, &h, sizeof(h));
}

/*
 * jemalloc 5.3 puts requests of opt.oversize_threshold and up in a separate
 * automatic arena (index opt.narenas) that it creates on first use with
 * default hooks, and mallctl refuses hooks for it (EFAULT) until it exists.
 * One such request makes it exist; its memory reaches our dalloc when freed.
 */
static int hook_huge_arena(unsigned arena)
{
	size_t threshold = 0;
	unsigned owner = 0;
	size_t len = sizeof(owner);
	int ret = set_hooks(arena);

	if (ret != EFAULT || !read_ctl("opt.oversize_threshold", &threshold, sizeof(threshold)) ||
	    threshold == 0)
		return ret;
	void *p = malloc(threshold); /* the shim's only malloc: setup, not a hook */
	/* asking who owns p also keeps the compiler from eliding the pair */
	if (p && je_ctl("arenas.lookup", &owner, &len, &p, sizeof(p)) == 0 && owner == arena)
		ret = set_hooks(arena);
	free(p);
	return ret;
}

/*
 * Automatic arenas are created lazily, with default hooks, when a thread
 * first needs one; setting arena.<i>.extent_hooks on an index below
 * opt.narenas that does not exist yet creates it with our hooks instead.
 * So hooking every index up front covers all threads, present and future.
 * Arenas made later through arenas.create keep what their creator chose.
 */
static void install_hooks(void)
{
	unsigned total = 0;

	if (!read_ctl("opt.narenas", &info.nauto, sizeof(info.nauto)) ||
	    !read_ctl("arenas.narenas", &total, sizeof(total)))
		return;
	for (unsigned i = 0; i < info.nauto; i++)
		info.hooked += set_hooks(i) == 0;
	if (total > info.nauto && hook_huge_arena(info.nauto) == 0) {
		info.hooked++;
		info.huge = true;
	}
}

static bool jemalloc_5(void)
{
	const char *v = NULL;

	if (!read_ctl("version", &v, sizeof(v)) || !v || v[0] != '5')
		return false;
	snprintf(info.version, sizeof(info.version), "%s", v);
	return true;
}

static void shim_start(void)
{
	shim.page = (size_t)sysconf(_SC_PAGESIZE);
	read_config(&shim.cfg);
	je_ctl = find_jemalloc();
	if (!je_ctl || !jemalloc_5()) {
		out("purge_jemalloc: jemalloc 5 does not serve malloc here: shim inactive "
		    "(preload libjemalloc.so.2 too)\n");
		return;
	}
	if (pool_init(&shim.pool, POOL_SLOTS) || setup_queue()) {
		out("purge_jemalloc: no memory for the pool or queue: shim inactive\n");
		return;
	}
	read_ctl("opt.retain", &info.retain, sizeof(info.retain));
	if (info.retain)
		out("purge_jemalloc: opt.retain is on: set MALLOC_CONF=retain:false (or preload "
		    "the shim before libjemalloc); see README.md\n");
	install_hooks();
	info.active = info.hooked > 0;
}

__attribute__((constructor)) static void shim_init(void)
{
	int saved = errno;

	shim_start();
	errno = saved;
}

/* ---- reporting --------------------------------------------------------- */

#define CT(f) atomic_load_explicit(&shim.ct.f, memory_order_relaxed)

/* Purge system calls made on the shim's behalf: libpurge's plus direct. */
EXPORT uint64_t purge_jemalloc_purge_syscalls(void)
{
	struct purge_stats st;

	if (!info.active)
		return 0;
	purge_get_stats(shim.q, &st);
	return st.pmadv_calls + st.madv_calls + CT(direct_madv);
}

static void print_libpurge(void)
{
	struct purge_stats s;

	purge_get_stats(shim.q, &s);
	out("libpurge: backend=%s advice=%s zeroed=%d enqueued_ranges=%" PRIu64
	    " enqueued_bytes=%" PRIu64 " merged_ranges=%" PRIu64 " cancelled_bytes=%" PRIu64
	    " flushes=%" PRIu64 " auto_flushes=%" PRIu64 "\n",
	    s.backend == PURGE_BACKEND_VECTORED ? "vectored" : "loop",
	    s.advice == MADV_FREE ? "free" : "dontneed", s.zeroed, s.enqueued_ranges,
	    s.enqueued_bytes, s.merged_ranges, s.cancelled_bytes, s.flushes, s.auto_flushes);
	out("libpurge: pmadv_calls=%" PRIu64 " madv_calls=%" PRIu64 " short_counts=%" PRIu64
	    " fallbacks=%" PRIu64 " purged_bytes=%" PRIu64 " failed_ranges=%" PRIu64
	    " failed_bytes=%" PRIu64 " pending_ranges=%" PRIu64 " pending_bytes=%" PRIu64 "\n",
	    s.pmadv_calls, s.madv_calls, s.short_counts, s.fallbacks, s.purged_bytes,
	    s.failed_ranges, s.failed_bytes, s.pending_ranges, s.pending_bytes);
}

static void print_shim(void)
{
	pthread_mutex_lock(&shim.pool_lock);
	unsigned n = shim.pool.n;
	size_t bytes = shim.pool.bytes;
	pthread_mutex_unlock(&shim.pool_lock);

	out("purge_jemalloc: jemalloc %s arenas_hooked=%u of %u%s retain=%d max_ranges=%u "
	    "max_bytes=%zu max_delay_ms=%" PRIu64 " pool_max=%zu check=%d\n",
	    info.version, info.hooked, info.nauto, info.huge ? "+huge" : "", info.retain,
	    shim.cfg.max_ranges, shim.cfg.max_bytes, shim.cfg.max_delay_ns / 1000000,
	    shim.cfg.pool_max, shim.cfg.check);
	out("purge_jemalloc: alloc=%" PRIu64 " pool=%" PRIu64 " mmap=%" PRIu64 " fixed=%" PRIu64
	    " zero=%" PRIu64 " zero_fill=%" PRIu64 " fail=%" PRIu64 " dalloc=%" PRIu64
	    " dalloc_bytes=%" PRIu64 " destroy=%" PRIu64 " split=%" PRIu64 " merge=%" PRIu64 "\n",
	    CT(alloc), CT(alloc_pool), CT(alloc_mmap), CT(alloc_fixed), CT(alloc_zero),
	    CT(zero_fill), CT(alloc_fail), CT(dalloc), CT(dalloc_bytes), CT(destroy), CT(split),
	    CT(merge));
	out("purge_jemalloc: pool_ranges=%u pool_bytes=%zu commit=%" PRIu64 " decommit=%" PRIu64
	    " purge_lazy=%" PRIu64 " purge_forced=%" PRIu64 " direct_madvise=%" PRIu64
	    " mmaps=%" PRIu64 " munmaps=%" PRIu64 " trimmed_bytes=%" PRIu64 " pool_full=%" PRIu64
	    " double_release=%" PRIu64 " enqueue_err=%" PRIu64 " failures=%" PRIu64 "\n",
	    n, bytes, CT(commit), CT(decommit), CT(purge_lazy), CT(purge_forced), CT(direct_madv),
	    CT(mmaps), CT(munmaps), CT(trimmed_bytes), CT(pool_full), CT(double_release),
	    CT(enqueue_err), CT(failures));
	if (shim.cfg.check)
		out("purge_jemalloc: check pending_checks=%" PRIu64 " zero_ranges=%" PRIu64
		    " zero_pages=%" PRIu64 "\n",
		    CT(check_pending), CT(check_zero_ranges), CT(check_zero_pages));
}

__attribute__((destructor)) static void shim_fini(void)
{
	if (!shim.cfg.stats)
		return;
	if (!info.active) {
		out("purge_jemalloc: inactive\n");
		return;
	}
	print_shim();
	print_libpurge();
}
