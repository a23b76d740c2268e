/* SPDX-License-Identifier: MIT */
/*
 * The idle thread (PURGE_JEMALLOC_IDLE, on by default).  libpurge checks
 * its age threshold only when something is enqueued, so a program that
 * frees and then goes quiet would keep up to MAX_BYTES of freed memory
 * resident for good.  This thread, the shim's only one (libpurge has none),
 *  - settles, in each shard, what has waited max_delay once the shard has
 *    enqueued nothing for max_delay (while frees go on, the enqueues'
 *    own age check does that work, and the thread stays off the locks);
 *  - settles everything at a memory-pressure event (purge_pressure_open());
 *  - turns jemalloc's own background threads off, once a second at most
 *    (shim_background_off: they have nothing to do here, and cost every
 *    free a wake-up), unless PURGE_JEMALLOC_KEEP_BG_THREAD=1.
 * The hooks pay one relaxed store of the coarse clock per release
 * (shard.last_enqueue), on a line they write anyway: no lock, no syscall.
 *
 * It never changes how the program lives or dies.  glibc ends the process
 * with exit(0) when the last thread it counts (__nptl_nthreads) ends
 * through pthread_exit or a return from its start routine
 * (nptl/pthread_create.c start_thread, and __libc_start_call_main for a
 * main thread that called pthread_exit).  The thread that starts this one
 * takes it out of that count as soon as pthread_create returns (itself
 * still counted then), so the program's last thread still ends the
 * process, on that thread, with status 0, as without the shim; exit,
 * _exit and exec end it anyway.  Where that count cannot be found and
 * checked against libthread_db's description of it, there is no thread.
 *
 * It starts at the program's first release (idle_released), not at
 * start-up: a wrapper such as timeout(1) or nice(1) that frees nothing
 * gets no thread and no trigger, so it takes no memory-pressure event from
 * the program it runs.  pthread_create allocates; the hooks call it
 * outside the shim's locks and, jemalloc 5.3's extent code holding none of
 * its own around extent hooks (extent.c asserts it), under jemalloc's
 * reentrancy guard, which sends those allocations to arena 0.  But glibc
 * frees dead threads' TLS while it holds the lock pthread_create takes
 * (nptl-stack.c), so a release from a process that has ever had a second
 * thread starts nothing at once: the next extent allocation does
 * (idle_allocating), as glibc allocates under no such lock.
 *
 * The thread blocks every signal, so a program's handlers (and its
 * sigwait/signalfd threads) never see it.  fork(): the child has no thread
 * and the parent's trigger is closed there; the child starts its own at
 * its own first release, with its own trigger.
 *
 * The trigger is opened a second after the thread starts, not at once: a
 * PSI trigger made the exit of a short process 14 ms slower here (9
 * against 23 ms for a whole run; fork-storm's 200 children: 1.0 against
 * 4.3 s).  psi_trigger_destroy() waits for an RCU grace period, and stops
 * the psimon kthread with a group's last trigger (kernel/sched/psi.c).
 *
 * An endpoint cannot make the thread spin: after any event it is not
 * polled for EVENT_GAP_NS; a FIFO, socket or device is read at most
 * READ_MAX bytes per event, dropped at end of file (/dev/null under any
 * spelling, a closed peer), and polled only while something is pending,
 * so that a FIFO's byte goes to a process that has something to give back.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/single_threaded.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

#define TRIGGER_AFTER_NS 1000000000u
/* How often it looks whether jemalloc's background threads were turned on
 * (redis does it after start-up, and CONFIG SET can at any time). */
#define BG_CHECK_NS 1000000000u
/* How often it looks whether something became pending, while a FIFO,
 * socket or device waits unread because nothing was. */
#define LOOK_NS 1000000000u
/* The least time between two polls of the endpoint that follow an event:
 * at most 10 pressure wake-ups a second, whatever the endpoint is.  A PSI
 * trigger fires at most once per window, 500 ms at the shortest. */
#define EVENT_GAP_NS 100000000u
/* Bytes read and discarded from a FIFO, socket or device per event. */
#define READ_MAX 4096

enum { IDLE_OFF, IDLE_WAIT, IDLE_WANTED, IDLE_STARTING, IDLE_RUNNING };

static struct {
	_Atomic int state;  /* IDLE_* */
	const char *off;    /* why IDLE_OFF, for the verbose line */
	unsigned *nthreads; /* glibc's __nptl_nthreads */
	/* The pressure trigger, or -1.  The thread sets it to -1 before it
	 * closes it, so a fork child never closes a number the parent has
	 * reused (it may keep a stale copy). */
	_Atomic int fd;
	short events;             /* POLLPRI for a PSI file, else POLLIN */
	int fd_err;               /* purge_pressure_open()'s answer when it gave no fd */
	_Atomic uint64_t open_at; /* when to open the trigger; 0: done */
	uint64_t quiet_until;     /* the endpoint is not polled before this */
} idle = {.fd = -1};

static uint64_t idle_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* ---- settling ------------------------------------------------------------ */

/* When sh's pending ranges are due: max_delay after the later of its
 * oldest pending range and its last enqueue (both from the coarse clock,
 * which lags this one: never late).  0: nothing pending; UINT64_MAX:
 * pending, but no age limit. */
static uint64_t idle_due(struct shard *sh)
{
	uint64_t oldest = purge_oldest_ns(sh->q);
	uint64_t last = atomic_load_explicit(&sh->last_enqueue, memory_order_relaxed);

	if (!oldest)
		return 0;
	if (!shim.cfg.max_delay_ns)
		return UINT64_MAX;
	return (last > oldest ? last : oldest) + shim.cfg.max_delay_ns;
}

/* Settles the shard if it is due; returns when it is due next (0: nothing
 * pending). */
static uint64_t idle_settle(struct shard *sh, uint64_t now)
{
	uint64_t due = idle_due(sh);

	if (!due || due > now)
		return due;
	purge_flush_older(sh->q, shim.cfg.max_delay_ns);
	shim_note_pending(sh);
	atomic_fetch_add_explicit(&sh->ct.idle_flushes, 1, memory_order_relaxed);
	due = idle_due(sh);
	/* enqueued since, or a stamp a tick ahead of our clock: not a spin */
	return due && due <= now ? now + 1000000 : due;
}

/* Settles what is due in every shard; returns the next due time
 * (UINT64_MAX: none), and in *pending whether anything is left.  With
 * nothing pending it looks again after one max_delay: a release only
 * stores a time. */
static uint64_t idle_settle_all(uint64_t now, bool *pending)
{
	uint64_t next = UINT64_MAX;

	*pending = false;
	for (unsigned i = 0; i < shim.nshard; i++) {
		struct shard *sh = &shim.shard[i];
		if (atomic_load_explicit(&sh->state, memory_order_acquire) != SHARD_READY)
			continue;
		uint64_t due = idle_settle(sh, now);
		*pending |= due != 0;
		if (due)
			next = min_u64(next, due);
	}
	if (!*pending && shim.cfg.max_delay_ns)
		next = now + shim.cfg.max_delay_ns;
	return next;
}

static void idle_flush_all(void)
{
	for (unsigned i = 0; i < shim.nshard; i++) {
		struct shard *sh = &shim.shard[i];
		if (atomic_load_explicit(&sh->state, memory_order_acquire) != SHARD_READY)
			continue;
		purge_flush(sh->q);
		shim_note_pending(sh);
		atomic_fetch_add_explicit(&sh->ct.pressure_flushes, 1, memory_order_relaxed);
	}
}

/* ---- the pressure endpoint ---------------------------------------------- */

/* Reads and discards what a FIFO, socket or device holds, READ_MAX bytes
 * at most (/dev/zero never runs dry); returns the bytes read.  *gone: end
 * of file or an error: the peer or the last writer is gone, or the device
 * never has data (/dev/null, whatever the spelling). */
static size_t idle_drain(int fd, bool *gone)
{
	char junk[256];
	size_t got = 0;

	while (got < READ_MAX) {
		ssize_t n = read(fd, junk, sizeof(junk));
		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		*gone |= n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
		break;
	}
	return got;
}

/* An event on the trigger: flush.  An error or hang-up, or end of file:
 * the trigger is gone (its cgroup removed, its peer closed), stop watching
 * it.  Either way the endpoint rests for EVENT_GAP_NS. */
static void idle_event(int fd, short revents)
{
	bool gone = revents & (POLLERR | POLLHUP | POLLNVAL);
	bool event = revents & idle.events;

	if (event && idle.events == POLLIN)
		event = idle_drain(fd, &gone) > 0; /* an end of file alone is no event */
	if (event)
		idle_flush_all();
	idle.quiet_until = idle_now() + EVENT_GAP_NS;
	if (gone) {
		idle.fd_err = -EPIPE;
		atomic_store(&idle.fd, -1);
		close(fd);
		if (shim.cfg.verbose)
			shim_out("pressure: no longer watched (end of file, error or hang-up)\n");
	}
}

/* What an -EINVAL from purge_pressure_open() means here. */
static const char *idle_einval(void)
{
	const char *watch = secure_getenv("MEMORY_PRESSURE_WATCH");
	struct stat st;

	if (!watch)
		return "the kernel refused the default PSI trigger";
	if (watch[0] != '/')
		return "$MEMORY_PRESSURE_WATCH is not an absolute path";
	if (stat(watch, &st) || !S_ISREG(st.st_mode))
		return "$MEMORY_PRESSURE_WRITE is not base64";
	return "the kernel refused the PSI trigger $MEMORY_PRESSURE_WRITE describes (a window "
	       "of 0.5 to 10 s, for unprivileged processes a multiple of 2 s, and a stall "
	       "threshold below it), or $MEMORY_PRESSURE_WRITE is not base64";
}

/* The verbose line: what is watched, or why nothing is. */
static void idle_say_trigger(int fd, mode_t mode)
{
	const char *watch = secure_getenv("MEMORY_PRESSURE_WATCH");
	char err[64];

	if (fd >= 0)
		shim_out("pressure: watching %.200s (%s)\n",
		         watch ? watch : "/proc/pressure/memory",
		         S_ISREG(mode) ? "PSI trigger"
		                       : "read only while something is pending, at most 10 "
		                         "events a second");
	else if (fd == -EHOSTDOWN)
		shim_out("pressure: not watched ($MEMORY_PRESSURE_WATCH turns it off)\n");
	else if (fd == -EINVAL)
		shim_out("pressure: not watched: EINVAL: %s\n", idle_einval());
	else
		shim_out("pressure: not watched: %s\n", strerror_r(-fd, err, sizeof(err)));
}

/* The trigger purge_pressure_open() names, and how to poll it. */
static void idle_open_trigger(void)
{
	struct stat st = {.st_mode = 0};
	int fd = purge_pressure_open();

	idle.fd_err = fd < 0 ? fd : 0;
	if (fd >= 0 && fstat(fd, &st) == 0)
		idle.events = S_ISREG(st.st_mode) ? POLLPRI : POLLIN;
	idle.open_at = 0;
	atomic_store(&idle.fd, fd);
	if (shim.cfg.verbose)
		idle_say_trigger(fd, st.st_mode);
}

/* ---- the thread ---------------------------------------------------------- */

/* One turn's plan: settles what is due, and returns poll()'s timeout (-1:
 * none) and in *fd the endpoint to poll now (-1: none). */
static int idle_plan(int *fd)
{
	uint64_t now = idle_now();
	bool pending;
	uint64_t next = idle_settle_all(now, &pending);

	if (idle.open_at)
		next = min_u64(next, idle.open_at);
	if (!shim.cfg.keep_bg)
		next = min_u64(next, now + BG_CHECK_NS);
	*fd = atomic_load(&idle.fd);
	if (*fd >= 0 && idle.events == POLLIN && !pending) {
		next = min_u64(next, now + LOOK_NS);
		*fd = -1;
	} else if (*fd >= 0 && now < idle.quiet_until) {
		next = min_u64(next, idle.quiet_until);
		*fd = -1;
	}
	if (next == UINT64_MAX)
		return -1;
	uint64_t ms = next > now ? (next - now) / 1000000 + 1 : 0; /* rounded up */
	return ms >= INT32_MAX ? INT32_MAX : (int)ms;
}

static void *idle_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "purge-idle");
	for (;;) {
		if (idle.open_at && idle_now() >= idle.open_at)
			idle_open_trigger();
		if (!shim.cfg.keep_bg && shim_background_off())
			atomic_fetch_add_explicit(&shim.shard[0].ct.bg_off, 1,
			                          memory_order_relaxed);
		int fd, timeout = idle_plan(&fd);
		struct pollfd p = {fd, idle.events, 0};
		int n = poll(&p, fd >= 0, timeout);
		atomic_fetch_add_explicit(&shim.shard[0].ct.idle_wakes, 1, memory_order_relaxed);
		if (n > 0)
			idle_event(fd, p.revents);
		if (timeout < 0 && fd < 0 && atomic_load(&idle.fd) < 0) {
			/* nothing left to wait for: back in the count, and end
			 * as glibc's threads do */
			__atomic_fetch_add(idle.nthreads, 1, __ATOMIC_SEQ_CST);
			return NULL;
		}
	}
}

/* From IDLE_WAIT or IDLE_WANTED (`from`), once. */
static void idle_start(int from)
{
	sigset_t all, mask;
	pthread_t tid;

	if (!atomic_compare_exchange_strong(&idle.state, &from, IDLE_STARTING))
		return; /* another thread, or a hook inside pthread_create's own malloc */
	idle.open_at = idle_now() + TRIGGER_AFTER_NS;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &mask); /* the thread inherits it */
	bool ok = pthread_create(&tid, NULL, idle_main, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	if (ok) {
		/* out of glibc's count; this thread is in it, so it is not the
		 * last one: the count stays above 0 */
		__atomic_fetch_sub(idle.nthreads, 1, __ATOMIC_SEQ_CST);
		pthread_detach(tid);
	} else {
		idle.off = "pthread_create failed";
	}
	atomic_store(&idle.state, ok ? IDLE_RUNNING : IDLE_OFF);
}

/* glibc's thread count, where libthread_db's description of it (bits,
 * elements, offset) says it is one unsigned int. */
static unsigned *idle_glibc_count(void)
{
	const uint32_t *desc = dlsym(RTLD_DEFAULT, "_thread_db___nptl_nthreads");
	unsigned *n = dlsym(RTLD_DEFAULT, "__nptl_nthreads");

	if (!n || !desc || desc[0] != 8 * sizeof(unsigned) || desc[1] != 1 || desc[2] != 0)
		return NULL;
	return n;
}

void idle_setup(void)
{
	if (!shim.cfg.idle) {
		idle.off = "PURGE_JEMALLOC_IDLE=0";
		return;
	}
	idle.nthreads = idle_glibc_count();
	if (!idle.nthreads) {
		idle.off = "glibc's thread count (__nptl_nthreads) not found: a thread "
		           "would keep the process alive after its last thread ends";
		return;
	}
	atomic_store(&idle.state, IDLE_WAIT);
}

void idle_released(void)
{
	if (atomic_load_explicit(&idle.state, memory_order_relaxed) != IDLE_WAIT)
		return;
	if (__libc_single_threaded) {
		idle_start(IDLE_WAIT);
		return;
	}
	int wait = IDLE_WAIT;
	atomic_compare_exchange_strong(&idle.state, &wait, IDLE_WANTED);
}

void idle_allocating(void)
{
	if (atomic_load_explicit(&idle.state, memory_order_relaxed) == IDLE_WANTED)
		idle_start(IDLE_WANTED);
}

void idle_fork_child(void)
{
	int fd = atomic_exchange(&idle.fd, -1);

	if (fd >= 0)
		close(fd);
	idle.quiet_until = 0;
	if (atomic_load(&idle.state) != IDLE_OFF)
		atomic_store(&idle.state, IDLE_WAIT);
}

bool idle_running(void)
{
	return atomic_load(&idle.state) == IDLE_RUNNING;
}

const char *idle_off(void)
{
	return atomic_load(&idle.state) == IDLE_OFF ? idle.off : NULL;
}

int idle_trigger(void)
{
	if (!idle_running() || idle.open_at)
		return 1;
	return atomic_load(&idle.fd) >= 0 ? 0 : idle.fd_err;
}
