// SPDX-License-Identifier: MIT
/* purge-bench helper threads (see bench-threads.h for why they exist). */
#include "bench-threads.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HELPER_PAGES 16 /* enough distinct pages to keep TLB entries in use */
#define HELPER_PAGE  4096

struct helper {
	pthread_t tid;
	struct bench_helpers *owner;
};

struct bench_helpers {
	atomic_bool stop;
	atomic_uint running;
	unsigned count;
	struct helper h[];
};

static void *helper_main(void *arg)
{
	struct helper *me = arg;
	/* Own memory, written in a loop: a helper must keep this mm's TLB
	 * state alive on its CPU, which an idle or sleeping thread would not. */
	volatile char *buf = malloc(HELPER_PAGES * HELPER_PAGE);
	atomic_fetch_add(&me->owner->running, 1); /* counted even on failure: never hang */
	if (!buf)
		return NULL;
	for (unsigned i = 0; !atomic_load_explicit(&me->owner->stop, memory_order_relaxed); i++)
		buf[(i % HELPER_PAGES) * HELPER_PAGE + (i / HELPER_PAGES) % 64]++;
	free((void *)buf);
	return NULL;
}

/* CPUs this process may use, in order; returns how many. */
static int allowed_cpus(int *cpus, int max)
{
	cpu_set_t set;
	int n = 0;
	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	for (int c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n;
}

static int pin(pthread_t t, int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(t, sizeof(set), &set);
}

/* Main thread on cpus[0], helper i on cpus[1 + i % (n - 1)], so helpers
 * never share the main thread's CPU unless there is only one.  Pinning is
 * best effort: a refusal (cgroup, container) only changes the note. */
static void pin_all(struct bench_helpers *hs, const int *cpus, int n, char *note, size_t len)
{
	if (n < 1 || pin(pthread_self(), cpus[0])) {
		snprintf(note, len, "not pinned (CPU affinity refused)");
		return;
	}
	int used = snprintf(note, len, "pthread_setaffinity_np: main thread on CPU %d", cpus[0]);
	int refused = 0;
	for (unsigned i = 0; i < hs->count; i++) {
		int cpu = n > 1 ? cpus[1 + i % (unsigned)(n - 1)] : cpus[0];
		refused += pin(hs->h[i].tid, cpu) != 0;
		if (i < 8 && used > 0 && (size_t)used < len)
			used += snprintf(note + used, len - (size_t)used, "%s%d",
			                 i ? "," : ", helpers on CPUs ", cpu);
	}
	if (used > 0 && (size_t)used < len)
		snprintf(note + used, len - (size_t)used, "%s%s%s%s", hs->count > 8 ? ",..." : "",
		         hs->count ? " writing their own memory in a loop" : "",
		         hs->count + 1 > (unsigned)n ? " (more threads than CPUs)" : "",
		         refused ? " (some pinning refused)" : "");
}

int bench_helpers_start(unsigned count, struct bench_helpers **out, char *note, size_t len)
{
	struct bench_helpers *hs = calloc(1, sizeof(*hs) + count * sizeof(hs->h[0]));
	if (!hs)
		return -ENOMEM;
	for (unsigned i = 0; i < count; i++, hs->count++) {
		hs->h[i].owner = hs;
		int err = pthread_create(&hs->h[i].tid, NULL, helper_main, &hs->h[i]);
		if (err) {
			bench_helpers_stop(hs);
			return -err;
		}
	}
	static int cpus[CPU_SETSIZE];
	pin_all(hs, cpus, allowed_cpus(cpus, CPU_SETSIZE), note, len);
	while (atomic_load(&hs->running) < hs->count)
		sched_yield(); /* timing starts only once every helper is live */
	*out = hs;
	return 0;
}

void bench_helpers_stop(struct bench_helpers *hs)
{
	if (!hs)
		return;
	atomic_store(&hs->stop, true);
	for (unsigned i = 0; i < hs->count; i++)
		pthread_join(hs->h[i].tid, NULL);
	free(hs);
}
