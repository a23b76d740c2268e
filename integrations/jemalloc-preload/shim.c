/* SPDX-License-Identifier: MIT */
/*
 * libpurge_jemalloc.so: preload it with the unmodified jemalloc 5.x and the
 * pages jemalloc releases are purged in batches by libpurge instead of one
 * madvise() per extent.
 *
 *   LD_PRELOAD="/abs/path/libpurge_jemalloc.so libjemalloc.so.2" program
 *
 * (an absolute path: children that run elsewhere inherit LD_PRELOAD)
 *
 * Setup (constructor): find jemalloc's mallctl, make one shard (a
 * PURGE_LOCKED queue and a pool, set up on the arena's first hook) for each
 * automatic arena, install the hooks on every one of them, then the fork
 * handlers.  See README.md beside this file for why each jemalloc
 * setting is needed.
 */
#include <dlfcn.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
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

struct shim shim;

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

/* ---- shards and the queue glue used by the hooks ----------------------- */

struct shard *shard_of(unsigned arena)
{
	return &shim.shard[arena < shim.nshard ? arena : arena % shim.nshard];
}

int shim_cancel(struct shard *sh, void *addr, size_t len)
{
	if (shim.cfg.check)
		return check_cancel(sh, addr, len);
	return purge_cancel(sh->q, addr, len);
}

size_t shim_note_pending(struct shard *sh)
{
	struct purge_stats st;

	purge_get_stats(sh->q, &st);
	/* held parts of huge frames (PURGE_HUGE) do not count: a flush_to
	 * would not settle them (they wait for their frame, MAX_DELAY_MS at
	 * most), so counting them would flush at every enqueue for nothing */
	size_t mine = (size_t)(st.pending_bytes - st.held_bytes);
	size_t old = atomic_exchange(&sh->pending, mine);
	size_t delta = mine - old; /* modulo: may be "negative" */
	return atomic_fetch_add(&shim.pending, delta) + delta;
}

/* Settles the shard's oldest ranges, up to `excess` bytes of those not
 * held for their frame; returns what is left of excess. */
static size_t trim_shard(struct shard *o, size_t excess)
{
	struct purge_stats st;

	if (atomic_load(&o->state) != SHARD_READY || !atomic_load(&o->pending))
		return excess;
	purge_get_stats(o->q, &st);
	size_t mine = (size_t)(st.pending_bytes - st.held_bytes);
	size_t take = mine < excess ? mine : excess;
	purge_flush_to(o->q, (size_t)st.pending_bytes - take);
	shim_note_pending(o);
	return excess - take;
}

/* The bytes threshold, with hysteresis: past max_bytes pending in all the
 * shards together, settle the oldest ranges until keep_bytes are left:
 * this shard's first (the one growing), then the others'.  The most
 * recently released ranges, the ones about to be reused, stay pending (and
 * resident).  Between reads of the queues the sum only grows, by what is
 * enqueued (cancels and flushes leave it high): an upper bound, read
 * afresh from every queue once it passes max_bytes, before anything is
 * flushed.  Reading the queue's stats after every enqueue cost a lock, a
 * memset and a copy of the stats per release. */
void shim_after_enqueue(struct shard *sh, size_t len)
{
	if (!shim.cfg.max_bytes)
		return;
	atomic_fetch_add_explicit(&sh->pending, len, memory_order_relaxed);
	if (atomic_fetch_add_explicit(&shim.pending, len, memory_order_relaxed) + len <=
	    shim.cfg.max_bytes)
		return;
	size_t sum = 0;
	for (unsigned i = 0; i < shim.nshard; i++)
		if (atomic_load(&shim.shard[i].state) == SHARD_READY)
			sum = shim_note_pending(&shim.shard[i]);
	if (sum <= shim.cfg.max_bytes)
		return;
	atomic_fetch_add_explicit(&sh->ct.flush_to, 1, memory_order_relaxed);
	size_t excess = trim_shard(sh, sum - shim.cfg.keep_bytes);
	for (unsigned i = 0; i < shim.nshard && excess; i++)
		if (&shim.shard[i] != sh)
			excess = trim_shard(&shim.shard[i], excess);
}

void shim_unmap(struct shard *sh, uintptr_t s, uintptr_t e)
{
	/* cancel first: a purge flushed after munmap could hit a new mapping
	 * that reuses these addresses */
	shim_cancel(sh, (void *)s, e - s);
	munmap((void *)s, e - s);
	atomic_fetch_add_explicit(&sh->ct.munmaps, 1, memory_order_relaxed);
}

/* Runs inside a flush, queue lock held: the pool lock nests inside it. */
static void on_failure(void *arg, void *addr, size_t len, int err)
{
	(void)err;
	shard_failed(arg, (uintptr_t)addr, (uintptr_t)addr + len);
}

/* ---- settings ---------------------------------------------------------- */

void shim_tag(char *buf, size_t len, const char *who)
{
	snprintf(buf, len, "%s[%d %.32s]", who, (int)getpid(), program_invocation_short_name);
}

/* stderr without stdio buffers (may run late in exit, or in a constructor),
 * after the tag of this process. */
void shim_out(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	shim_tag(buf, sizeof(buf), "purge_jemalloc");
	size_t at = strlen(buf);
	at += (size_t)snprintf(buf + at, sizeof(buf) - at, ": ");
	va_start(ap, fmt);
	int n = vsnprintf(buf + at, sizeof(buf) - at, fmt, ap);
	va_end(ap);
	if (n > 0)
		at += (size_t)n < sizeof(buf) - at ? (size_t)n : sizeof(buf) - at - 1;
	(void)!write(2, buf, at);
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
		shim_out("ignoring %s=%s\n", name, e);
}

static bool env_flag(const char *name)
{
	const char *e = getenv(name);

	return e && *e && strcmp(e, "0") != 0;
}

/*
 * No limit on the pools' address space, as jemalloc's own default
 * (retain:true) keeps all of it: what a pool holds has been or will be
 * purged, and unmapping its oldest holes split the heap's mappings into
 * thousands of VMAs (5,091 munmaps and 3.7% of redis-server's CPU time in
 * redis-bench.sh's phase 1, with a 1 GiB limit), which every later fault
 * and purge then walks.  Under strict overcommit (vm.overcommit_memory=2)
 * mapped memory is charged whether resident or not: 1 GiB there.
 */
static uint64_t default_pool_max(void)
{
	char c = 0;
	int fd = open("/proc/sys/vm/overcommit_memory", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, &c, 1) != 1)
			c = 0;
		close(fd);
	}
	return c == '2' ? (uint64_t)1 << 30 : 0;
}

/* Defaults: README.md, "Settings". */
static void read_config(struct shim_config *c)
{
	uint64_t ranges = 4096, bytes = 32 << 20, keep = UINT64_MAX, delay_ms = 1000;
	uint64_t pool_max = default_pool_max(), incremental = 1, idle = 1, keep_bg = 0;

	env_size("PURGE_JEMALLOC_MAX_RANGES", 1, 1u << 20, &ranges);
	env_size("PURGE_JEMALLOC_MAX_BYTES", 0, SIZE_MAX, &bytes);
	env_size("PURGE_JEMALLOC_KEEP_BYTES", 0, bytes ? bytes - 1 : 0, &keep);
	env_size("PURGE_JEMALLOC_MAX_DELAY_MS", 0, UINT64_MAX / 1000000, &delay_ms);
	env_size("PURGE_JEMALLOC_POOL_MAX", 0, SIZE_MAX, &pool_max);
	env_size("PURGE_JEMALLOC_INCREMENTAL", 0, 1, &incremental);
	env_size("PURGE_JEMALLOC_IDLE", 0, 1, &idle);
	env_size("PURGE_JEMALLOC_KEEP_BG_THREAD", 0, 1, &keep_bg);
	c->max_ranges = (unsigned)ranges;
	c->max_bytes = (size_t)bytes;
	c->keep_bytes = keep == UINT64_MAX ? (size_t)bytes / 2 : (size_t)keep;
	c->max_delay_ns = delay_ms * 1000000;
	c->pool_max = (size_t)pool_max;
	c->incremental = incremental;
	c->idle = idle;
	c->keep_bg = keep_bg;
	c->advice = MADV_DONTNEED;
	const char *adv = getenv("PURGE_JEMALLOC_ADVICE");
	if (adv && !strcmp(adv, "free"))
		c->advice = MADV_FREE;
	else if (adv && strcmp(adv, "dontneed"))
		shim_out("ignoring PURGE_JEMALLOC_ADVICE=%s\n", adv);
	c->check = env_flag("PURGE_JEMALLOC_CHECK");
	const char *st = getenv("PURGE_JEMALLOC_STATS");
	c->stats = st && !strcmp(st, "json")          ? STATS_JSON
	           : env_flag("PURGE_JEMALLOC_STATS") ? STATS_TEXT
	                                              : STATS_OFF;
}

/* libpurge ignores PURGE_BATCH and PURGE_MODE when they are invalid, and
 * says so only in its stats: say it where the user will see it. */
static void warn_env_ignored(unsigned ignored)
{
	static const struct {
		unsigned bit;
		const char *name;
	} knobs[] = {{PURGE_ENV_BATCH, "PURGE_BATCH"}, {PURGE_ENV_MODE, "PURGE_MODE"}};
	char list[256];
	size_t at = 0;

	list[0] = '\0';
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		const char *v = getenv(knobs[i].name);
		if (!(ignored & knobs[i].bit) || at >= sizeof(list))
			continue;
		int n =
		    snprintf(list + at, sizeof(list) - at, " %s=%.64s", knobs[i].name, v ? v : "");
		at += n > 0 ? (size_t)n : 0;
	}
	if (list[0])
		shim_out("libpurge ignores invalid%s (its defaults apply)\n", list);
}

/* The shard's queue: all shards alike. */
static int setup_queue(struct shard *sh)
{
	struct purge_config qc = {
	    .advice = shim.cfg.advice,
	    .capacity = shim.cfg.max_ranges,
	    /* PURGE_INCREMENTAL: the count and age thresholds settle the
	     * oldest `batch` ranges at a time, not the whole queue; a quarter
	     * of the queue unless PURGE_BATCH says otherwise */
	    .batch =
	        shim.cfg.incremental && !getenv("PURGE_BATCH") ? (shim.cfg.max_ranges + 3) / 4 : 0,
	    /* the bytes threshold is the shim's own: shim_after_enqueue */
	    .max_pending_bytes = 0,
	    .max_delay_ns = shim.cfg.max_delay_ns,
	    .flags = PURGE_LOCKED | (shim.cfg.incremental ? PURGE_INCREMENTAL : 0) |
	             (shim.cfg.huge ? PURGE_HUGE : 0),
	    .on_failure = on_failure,
	    .arg = sh,
	};
	struct purge_stats st;

	if (qc.batch > PURGE_BATCH_MAX)
		qc.batch = PURGE_BATCH_MAX;
	int ret = purge_queue_create(&sh->q, &qc);
	if (ret)
		return ret;
	purge_get_stats(sh->q, &st);
	sh->zeroing = st.zeroed;
	if (sh == shim.shard)
		warn_env_ignored(st.env_ignored);
	return 0;
}

/* Only inside a hook's gate (or before the hooks are installed): a fork
 * handler never finds a shard half set up. */
bool shard_ready(struct shard *sh)
{
	int s = atomic_load_explicit(&sh->state, memory_order_acquire);
	int none = SHARD_NONE;

	if (s == SHARD_READY)
		return true;
	if (s == SHARD_NONE && atomic_compare_exchange_strong(&sh->state, &none, SHARD_BUSY)) {
		pthread_mutex_init(&sh->pool_lock, NULL);
		bool ok = pool_init(&sh->pool, POOL_SLOTS) == 0 && setup_queue(sh) == 0;
		atomic_store_explicit(&sh->state, ok ? SHARD_READY : SHARD_FAILED,
		                      memory_order_release);
		return ok;
	}
	while ((s = atomic_load_explicit(&sh->state, memory_order_acquire)) == SHARD_BUSY)
		sched_yield();
	return s == SHARD_READY;
}

/* One shard per automatic arena and one for the oversize arena, mmap'ed:
 * untouched pages for the arenas no thread uses. */
static bool make_shards(unsigned nauto)
{
	size_t len = (size_t)(nauto + 1) * sizeof(struct shard);
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return false;
	shim.shard = m;
	shim.nshard = nauto + 1;
	return shard_ready(&shim.shard[0]);
}

/* ---- finding jemalloc and hooking its arenas --------------------------- */

/* Where jemalloc's thread.allocated is there (--enable-stats, the default
 * and Debian's), it decides; else the old test: the jemalloc object's
 * malloc is the global one, which misses non-PIE programs (see below). */
static bool same_malloc(const void *ctl)
{
	Dl_info di;

	if (!dladdr(ctl, &di))
		return false;
	void *self = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (!self)
		return false;
	bool serves = dlsym(self, "malloc") == dlsym(RTLD_DEFAULT, "malloc");
	dlclose(self);
	return serves;
}

/*
 * Whether the jemalloc of this mallctl serves the process's malloc(): a
 * malloc of PROBE bytes moves its thread.allocated (this thread's bytes
 * allocated, jemalloc's fast path included) by at least PROBE.  Asked of
 * jemalloc, not of symbol addresses: in a non-PIE program that takes
 * malloc's address (Debian's /usr/bin/python3), dlsym(RTLD_DEFAULT,
 * "malloc") is the executable's canonical PLT entry, never jemalloc's.
 * Another allocator in front of jemalloc leaves the counter still.
 */
static bool serves_malloc(mallctl_fn ctl, const void *sym)
{
	enum { PROBE = 4096 };
	uint64_t before, after;
	size_t len = sizeof(before);

	if (ctl("thread.allocated", &before, &len, NULL, 0) || len != sizeof(before))
		return same_malloc(sym);
	void *volatile p = malloc(PROBE); /* volatile: the pair is not elided */
	bool moved = ctl("thread.allocated", &after, &len, NULL, 0) == 0 && after - before >= PROBE;
	free(p);
	return p && moved;
}

/* The mallctl of the jemalloc that actually serves malloc(), or NULL. */
static mallctl_fn find_jemalloc(void)
{
	void *ctl = dlsym(RTLD_DEFAULT, "mallctl");
	mallctl_fn fn;

	if (!ctl)
		return NULL;
	memcpy(&fn, &ctl, sizeof(fn));
	return serves_malloc(fn, ctl) ? fn : NULL;
}

static bool read_ctl(const char *name, void *val, size_t len)
{
	size_t got = len;

	return je_ctl(name, val, &got, NULL, 0) == 0 && got == len;
}

/*
 * jemalloc's background threads only decay (the shim sets both decays to
 * 0: nothing to decay; its idle thread does the deferred work), but 5.3.0
 * and 5.3.1 wake one up on every free of an extent while it sleeps without
 * a deadline, as it does when nothing decays (arena.c,
 * arena_background_thread_inactivity_check via arena_handle_deferred_work:
 * a pthread_cond_signal and two context switches per free).  redis turns
 * them on at start-up (jemalloc-bg-thread yes): under the shim that cost
 * the server 10-15% of its CPU time in a churn of 64 KiB values.
 */
bool shim_background_off(void)
{
	bool on = false, off = false;

	if (!je_ctl || !read_ctl("background_thread", &on, sizeof(on)) || !on)
		return false;
	return je_ctl("background_thread", NULL, NULL, &off, sizeof(off)) == 0;
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
	void *p = malloc(threshold); /* setup, not a hook (as in serves_malloc) */
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

	if (!read_ctl("arenas.narenas", &total, sizeof(total)))
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

/* ---- fork --------------------------------------------------------------- */

/*
 * Which atfork handlers run first.  Found with gdb (a breakpoint on
 * __register_atfork) under LD_PRELOAD="libpurge_jemalloc.so libjemalloc.so.2"
 * with glibc 2.36 and jemalloc 5.3.0: jemalloc registers first.  Its
 * malloc_init_hard_recursible() calls pthread_atfork() when the process
 * makes its first malloc, and that malloc comes from libstdc++'s
 * constructor (its emergency exception pool).  libstdc++ is a dependency of
 * libjemalloc.so.2, so it is initialised before either preload, and the
 * shim's constructor, which registers the shim's handlers, runs later.
 * Prepare handlers run in reverse order of registration: the shim's runs
 * BEFORE jemalloc's prefork, and its parent/child handlers after
 * jemalloc's postfork ones.
 *
 * So fork_prepare() must not hold the queue or pool lock while a thread
 * inside a hook holds a jemalloc lock and waits for one of them: jemalloc's
 * prefork would then wait for that jemalloc lock forever.  It first closes
 * the fork gate (hooks.c): it waits until no hook is inside the queue or
 * pool, and later hooks keep out of both, so they never wait for the
 * shim's locks and always release jemalloc's.  Then it takes the queue
 * lock and the pool lock, in the hooks' order.  This holds whichever order
 * the handlers were registered in.
 */
static bool ready(unsigned i)
{
	return atomic_load(&shim.shard[i].state) == SHARD_READY;
}

static void fork_prepare(void)
{
	fork_gate_close();
	for (unsigned i = 0; i < shim.nshard; i++)
		if (ready(i)) {
			purge_fork_prepare(shim.shard[i].q);
			pthread_mutex_lock(&shim.shard[i].pool_lock);
		}
}

static void fork_parent(void)
{
	for (unsigned i = shim.nshard; i-- > 0;)
		if (ready(i)) {
			pthread_mutex_unlock(&shim.shard[i].pool_lock);
			purge_fork_parent(shim.shard[i].q);
		}
	fork_gate_open(false);
	if (!atomic_load(&shim.forking)) /* else the last fork of those at once does it */
		for (unsigned i = 0; i < shim.nshard; i++)
			if (ready(i))
				fork_settle(&shim.shard[i]);
	atomic_fetch_add_explicit(&shim.shard[0].ct.forks, 1, memory_order_relaxed);
}

/* The child's only thread is the one that forked: fresh pool locks (the
 * held ones belong to the parent's thread id), usable queues. */
static void fork_child(void)
{
	for (unsigned i = 0; i < shim.nshard; i++)
		if (ready(i)) {
			pthread_mutex_init(&shim.shard[i].pool_lock, NULL);
			purge_fork_child(shim.shard[i].q);
		}
	fork_gate_open(true);
	for (unsigned i = 0; i < shim.nshard; i++)
		if (ready(i))
			fork_settle(&shim.shard[i]);
	idle_fork_child();
}

/* Why PURGE_HUGE is on or off, and the hint fresh mappings get. */
static void say_huge(void)
{
	const struct shim_thp *t = &shim.thp;

	shim_out("huge pages: PURGE_HUGE %s (%s; jemalloc opt.thp=%s, system %s)%s\n",
	         shim.cfg.huge ? "on" : "off", t->forced ? "PURGE_JEMALLOC_HUGE" : "from THP",
	         t->je[0] ? t->je : "unknown", t->sys[0] ? t->sys : "without THP",
	         t->hint == MADV_HUGEPAGE     ? ", fresh mappings MADV_HUGEPAGE"
	         : t->hint == MADV_NOHUGEPAGE ? ", fresh mappings MADV_NOHUGEPAGE"
	                                      : "");
}

static void say_active(void)
{
	shim_out("%s: jemalloc %s, %u of %u arenas hooked%s\n",
	         info.active ? "shim active" : "no arena hooked: shim inactive", info.version,
	         info.hooked, info.nauto, info.huge ? " +huge" : "");
	if (!info.active)
		return;
	say_huge();
	if (idle_off())
		shim_out("idle thread off: %s\n", idle_off());
	else
		shim_out("idle thread: starts at the first release; settles after %" PRIu64
		         " ms without releases (0: never); pressure events watched 1 s after "
		         "it starts\n",
		         shim.cfg.max_delay_ns / 1000000);
}

static void shim_start(void)
{
	shim.page = (size_t)sysconf(_SC_PAGESIZE);
	shim.cfg.verbose = env_flag("PURGE_JEMALLOC_VERBOSE");
	je_ctl = find_jemalloc();
	if (!je_ctl || !jemalloc_5()) {
		/* every process started from one with the preload gets here:
		 * quiet unless asked */
		if (shim.cfg.verbose)
			shim_out("jemalloc 5 does not serve malloc here: shim inactive "
			         "(preload libjemalloc.so.2 too)\n");
		return;
	}
	read_config(&shim.cfg);
	const char *thp = NULL;
	thp_setup(read_ctl("opt.thp", &thp, sizeof(thp)) ? thp : NULL);
	if (shim.thp.bad_env)
		shim_out("ignoring PURGE_JEMALLOC_HUGE=%s (0 or 1)\n",
		         getenv("PURGE_JEMALLOC_HUGE"));
	/* jemalloc 5.3 with retain:true, several arenas and extent hooks that
	 * give memory back crashes (a NULL dereference in its own metadata),
	 * measured even with hooks that only mmap and munmap: README.md */
	read_ctl("opt.retain", &info.retain, sizeof(info.retain));
	if (info.retain) {
		shim_out("opt.retain is on: shim inactive; set "
		         "MALLOC_CONF=retain:false (or preload the shim before libjemalloc); see "
		         "README.md\n");
		return;
	}
	if (!read_ctl("opt.narenas", &info.nauto, sizeof(info.nauto)) || !make_shards(info.nauto)) {
		shim_out("no memory for the pool or queue: shim inactive\n");
		return;
	}
	if (pthread_atfork(fork_prepare, fork_parent, fork_child)) {
		shim_out("pthread_atfork failed: shim inactive\n");
		return;
	}
	install_hooks();
	info.active = info.hooked > 0;
	if (info.active)
		idle_setup(); /* after the probes above: their releases are the shim's */
	if (shim.cfg.verbose)
		say_active();
}

__attribute__((constructor)) static void shim_init(void)
{
	int saved = errno;

	shim_start();
	errno = saved;
}

/* ---- reporting --------------------------------------------------------- */

/* A shim counter, summed over the shards. */
static uint64_t ct_sum(size_t off)
{
	uint64_t s = 0;

	for (unsigned i = 0; i < shim.nshard; i++)
		s += atomic_load_explicit((_Atomic uint64_t *)((char *)&shim.shard[i].ct + off),
		                          memory_order_relaxed);
	return s;
}

#define CT(f) ct_sum(offsetof(struct shim_counters, f))

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Adds one shard's libpurge counters to a sum: the longest times are the
 * longest of any shard; advice, backend and knobs are alike in all. */
static void add_stats(struct purge_stats *s, const struct purge_stats *a)
{
	s->enqueued_ranges += a->enqueued_ranges;
	s->enqueued_bytes += a->enqueued_bytes;
	s->merged_ranges += a->merged_ranges;
	s->cancelled_bytes += a->cancelled_bytes;
	s->flushes += a->flushes;
	s->auto_flushes += a->auto_flushes;
	s->pmadv_calls += a->pmadv_calls;
	s->madv_calls += a->madv_calls;
	s->short_counts += a->short_counts;
	s->fallbacks += a->fallbacks;
	s->purged_bytes += a->purged_bytes;
	s->failed_ranges += a->failed_ranges;
	s->failed_bytes += a->failed_bytes;
	s->pending_ranges += a->pending_ranges;
	s->pending_bytes += a->pending_bytes;
	s->flush_ns += a->flush_ns;
	s->flush_max_ns = max_u64(s->flush_max_ns, a->flush_max_ns);
	s->call_max_ns = max_u64(s->call_max_ns, a->call_max_ns);
	s->call_iovecs += a->call_iovecs;
	for (int i = 0; i < PURGE_STATS_IOV_BUCKETS; i++)
		s->calls_by_iovecs[i] += a->calls_by_iovecs[i];
	s->frames_whole += a->frames_whole;
	s->frames_split += a->frames_split;
	s->held_ranges += a->held_ranges;
	s->held_bytes += a->held_bytes;
	s->backend = a->backend;
}

/* The libpurge counters of all the shards' queues, as if of one queue;
 * returns how many queues there are. */
static unsigned sum_stats(struct purge_stats *s)
{
	struct purge_stats st;
	unsigned n = 0;

	for (unsigned i = 0; i < shim.nshard; i++) {
		if (atomic_load(&shim.shard[i].state) != SHARD_READY)
			continue;
		purge_get_stats(shim.shard[i].q, &st);
		if (n++ == 0)
			*s = st;
		else
			add_stats(s, &st);
	}
	return n;
}

/* Purge system calls made on the shim's behalf: libpurge's plus direct. */
EXPORT uint64_t purge_jemalloc_purge_syscalls(void)
{
	struct purge_stats st;

	if (!info.active || !sum_stats(&st))
		return 0;
	return st.pmadv_calls + st.madv_calls + CT(direct_madv);
}

/* The libpurge counters of the shim's queues (one per arena in use), summed,
 * through purge_stats_format (flags: PURGE_FORMAT_JSON or 0): for a
 * program, or a debugger (`call purge_jemalloc_stats(buf, sizeof(buf),
 * 0)`).  -ENODEV when the shim is inactive.  No allocation. */
EXPORT int purge_jemalloc_stats(char *buf, size_t len, unsigned flags)
{
	struct purge_stats st;

	if (!info.active || !sum_stats(&st))
		return -ENODEV;
	return purge_stats_format(&st, buf, len, flags);
}

/* A text buffer on the stack: no stdio buffers, no allocation at exit. */
struct text {
	char b[8192];
	size_t at;
};

static void add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct text *t, const char *fmt, ...)
{
	va_list ap;

	if (t->at >= sizeof(t->b))
		return;
	va_start(ap, fmt);
	int n = vsnprintf(t->b + t->at, sizeof(t->b) - t->at, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->at += (size_t)n < sizeof(t->b) - t->at ? (size_t)n : sizeof(t->b) - t->at - 1;
}

static void flush_text(struct text *t)
{
	if (t->at)
		(void)!write(2, t->b, t->at);
	t->at = 0;
}

struct kv {
	const char *name;
	uint64_t v;
};

/* Text: `purge_jemalloc[PID PROGRAM]: name=value ...`, a few to a line;
 * JSON: members. */
static void add_kvs(struct text *t, bool json, const struct kv *kv, size_t n)
{
	char tag[64];

	shim_tag(tag, sizeof(tag), "purge_jemalloc");
	for (size_t i = 0; i < n; i++) {
		if (json)
			add(t, ",\"%s\":%" PRIu64, kv[i].name, kv[i].v);
		else
			add(t, "%s%s%s=%" PRIu64 "%s", i % 10 ? " " : tag, i % 10 ? "" : ": ",
			    kv[i].name, kv[i].v, i % 10 == 9 || i + 1 == n ? "\n" : "");
	}
}

/* A program name as a JSON string's contents: printable ASCII only, no
 * quote or backslash. */
static void json_safe(char *out, size_t len, const char *s)
{
	size_t i = 0;

	for (; s[i] && i + 1 < len; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\' ? s[i] : '?';
	out[i] = '\0';
}

static void print_shim(struct text *t, bool json)
{
	uint64_t n = 0, bytes = 0, shards = 0;

	for (unsigned i = 0; i < shim.nshard; i++) {
		struct shard *sh = &shim.shard[i];
		if (atomic_load(&sh->state) != SHARD_READY)
			continue;
		pthread_mutex_lock(&sh->pool_lock);
		n += sh->pool.n;
		bytes += sh->pool.bytes;
		pthread_mutex_unlock(&sh->pool_lock);
		shards++;
	}

	char tag[64], prog[40];

	shim_tag(tag, sizeof(tag), "purge_jemalloc");
	json_safe(prog, sizeof(prog), program_invocation_short_name);
	if (json)
		add(t,
		    "{\"purge_jemalloc\":{\"pid\":%d,\"program\":\"%s\",\"jemalloc\":\"%s\","
		    "\"huge\":%s,\"thp\":\"%s\",\"thp_system\":\"%s\"",
		    (int)getpid(), prog, info.version, info.huge ? "true" : "false", shim.thp.je,
		    shim.thp.sys);
	else
		add(t, "%s: jemalloc %s arenas_hooked=%u of %u%s thp=%s system_thp=%s\n", tag,
		    info.version, info.hooked, info.nauto, info.huge ? "+huge" : "",
		    shim.thp.je[0] ? shim.thp.je : "unknown",
		    shim.thp.sys[0] ? shim.thp.sys : "none");
	const struct kv set[] = {
	    {"arenas_hooked", info.hooked},
	    {"arenas", info.nauto},
	    {"shards", shards},
	    {"retain", info.retain},
	    {"max_ranges", shim.cfg.max_ranges},
	    {"max_bytes", shim.cfg.max_bytes},
	    {"keep_bytes", shim.cfg.keep_bytes},
	    {"max_delay_ms", shim.cfg.max_delay_ns / 1000000},
	    {"pool_max", shim.cfg.pool_max},
	    {"incremental", shim.cfg.incremental},
	    {"purge_huge", shim.cfg.huge},
	    {"idle_thread", idle_running()},
	    {"keep_bg_thread", shim.cfg.keep_bg},
	    {"pressure_watched", idle_trigger() == 0},
	    {"check", shim.cfg.check},
	};
	const struct kv ct[] = {
	    {"alloc", CT(alloc)},
	    {"pool", CT(alloc_pool)},
	    {"mmap", CT(alloc_mmap)},
	    {"fixed", CT(alloc_fixed)},
	    {"zero", CT(alloc_zero)},
	    {"zero_fill", CT(zero_fill)},
	    {"fail", CT(alloc_fail)},
	    {"dalloc", CT(dalloc)},
	    {"dalloc_bytes", CT(dalloc_bytes)},
	    {"destroy", CT(destroy)},
	    {"split", CT(split)},
	    {"merge", CT(merge)},
	    {"pool_ranges", n},
	    {"pool_bytes", bytes},
	    {"commit", CT(commit)},
	    {"decommit", CT(decommit)},
	    {"purge_lazy", CT(purge_lazy)},
	    {"purge_forced", CT(purge_forced)},
	    {"direct_madvise", CT(direct_madv)},
	    {"mmaps", CT(mmaps)},
	    {"munmaps", CT(munmaps)},
	    {"trimmed_bytes", CT(trimmed_bytes)},
	    {"pool_full", CT(pool_full)},
	    {"double_release", CT(double_release)},
	    {"enqueue_err", CT(enqueue_err)},
	    {"failures", CT(failures)},
	    {"flush_to", CT(flush_to)},
	    {"forks", CT(forks)},
	    {"fork_bypass", CT(fork_bypass)},
	    {"fork_trimmed", CT(fork_trimmed)},
	    {"steal", CT(steal)},
	    {"idle_flushes", CT(idle_flushes)},
	    {"idle_wakes", CT(idle_wakes)},
	    {"pressure_flushes", CT(pressure_flushes)},
	    {"bg_thread_off", CT(bg_off)},
	};
	const struct kv check[] = {
	    {"pending_checks", CT(check_pending)},
	    {"zero_ranges", CT(check_zero_ranges)},
	    {"zero_pages", CT(check_zero_pages)},
	};
	add_kvs(t, json, set + (json ? 0 : 1), sizeof(set) / sizeof(set[0]) - (json ? 0 : 1));
	add_kvs(t, json, ct, sizeof(ct) / sizeof(ct[0]));
	if (shim.cfg.check)
		add_kvs(t, json, check, sizeof(check) / sizeof(check[0]));
	if (json)
		add(t, "}");
}

/* libpurge's own format: `libpurge[PID PROGRAM]: name value` lines, or a
 * JSON member. */
static void print_libpurge(struct text *t, bool json)
{
	char buf[4096];
	int n = purge_jemalloc_stats(buf, sizeof(buf), json ? PURGE_FORMAT_JSON : 0);

	if (n < 0)
		return;
	if (json) {
		size_t len = strlen(buf);
		if (len && buf[len - 1] == '\n')
			buf[len - 1] = '\0';
		add(t, ",\"libpurge\":%s}\n", buf);
		return;
	}
	char tag[64];

	shim_tag(tag, sizeof(tag), "libpurge");
	for (char *line = buf; *line;) {
		size_t k = strcspn(line, "\n");
		add(t, "%s: %.*s\n", tag, (int)k, line);
		line += k + (line[k] == '\n');
	}
}

__attribute__((destructor)) static void shim_fini(void)
{
	struct text t = {.at = 0};
	bool json = shim.cfg.stats == STATS_JSON;

	if (shim.cfg.stats == STATS_OFF || !info.active)
		return;
	print_shim(&t, json);
	print_libpurge(&t, json);
	flush_text(&t);
}
