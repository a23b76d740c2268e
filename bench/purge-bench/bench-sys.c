// SPDX-License-Identifier: MIT
/* purge-bench: the machine facts printed with every result, and the helper
 * threads that keep the process's mm live on other CPUs, so that every TLB
 * flush of a purge needs an IPI there, as in a multi-threaded program. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bench.h"
#include "purge.h"

/* The rest of the first line of file that starts with key; "unknown" if none. */
static void read_line(const char *file, const char *key, char *out, size_t len)
{
	char line[256];
	FILE *f = fopen(file, "r");
	snprintf(out, len, "unknown");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key))) {
			line[strcspn(line, "\n")] = 0;
			snprintf(out, len, "%s", line + strlen(key));
			break;
		}
	if (f)
		fclose(f);
}

void bench_loadavg(double avg[3])
{
	FILE *f = fopen("/proc/loadavg", "r");
	if (!f || fscanf(f, "%lf %lf %lf", &avg[0], &avg[1], &avg[2]) != 3)
		avg[0] = avg[1] = avg[2] = -1;
	if (f)
		fclose(f);
}

void bench_machine_read(struct bench_machine *m, int advice)
{
	struct utsname u;
	memset(m, 0, sizeof(*m));
	read_line("/proc/cpuinfo", "model name\t: ", m->cpu, sizeof(m->cpu));
	read_line("/sys/kernel/mm/transparent_hugepage/enabled", "", m->thp, sizeof(m->thp));
	int ok = uname(&u) == 0;
	snprintf(m->kernel, sizeof(m->kernel), "%s", ok ? u.release : "unknown");
	snprintf(m->arch, sizeof(m->arch), "%s", ok ? u.machine : "unknown");
	m->cpus = sysconf(_SC_NPROCESSORS_ONLN);
	m->cpus = m->cpus < 1 ? 1 : m->cpus;
	m->page = sysconf(_SC_PAGESIZE);
	int b = purge_backend(advice);
	m->backend = b == PURGE_BACKEND_VECTORED ? "vectored"
	             : b == PURGE_BACKEND_LOOP   ? "loop"
	                                         : "error";
	bench_memsrc_find(&m->mem, "/proc/self/cgroup", "/sys/fs/cgroup", "/proc/self/statm");
	bench_loadavg(m->load_start);
	m->load_end[0] = m->load_end[1] = m->load_end[2] = -1;
}

size_t bench_frame_size(void)
{
	uint64_t v;
	if (bench_read_number("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", &v) || !v ||
	    v & (v - 1))
		return (size_t)2 << 20; /* x86_64's PMD; without THP the layout still works */
	return (size_t)v;
}

#define HELPER_PAGES 16 /* distinct pages, so TLB entries stay in use */

struct bench_helpers {
	atomic_bool stop;
	atomic_uint running;
	unsigned count;
	pthread_t tid[];
};

/* Own memory, written in a loop: a sleeping thread would not keep this
 * mm's TLB state alive on its CPU. */
static void *helper_main(void *arg)
{
	struct bench_helpers *hs = arg;
	volatile char *buf = malloc(HELPER_PAGES * 4096);
	atomic_fetch_add(&hs->running, 1); /* counted even on failure: never hang */
	for (unsigned i = 0; buf && !atomic_load_explicit(&hs->stop, memory_order_relaxed); i++)
		buf[(i % HELPER_PAGES) * 4096 + (i / HELPER_PAGES) % 64]++;
	free((void *)buf);
	return NULL;
}

/* Main thread on its first allowed CPU, helpers on the other allowed ones
 * (on the same one when it is alone).  Best effort: a refusal (cgroup,
 * container) only changes the note. */
static void pin_all(struct bench_helpers *hs, char *note, size_t len)
{
	cpu_set_t all, one;
	int first = 0;
	if (sched_getaffinity(0, sizeof(all), &all)) {
		snprintf(note, len, "not pinned (CPU affinity unknown)");
		return;
	}
	while (!CPU_ISSET(first, &all))
		first++;
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	int refused = pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
	bool alone = CPU_COUNT(&all) == 1;
	if (!alone)
		CPU_CLR(first, &all);
	for (unsigned i = 0; i < hs->count; i++)
		refused |= pthread_setaffinity_np(hs->tid[i], sizeof(all), &all);
	snprintf(note, len, "main thread on CPU %d%s%s", first,
	         !hs->count ? ""
	         : alone    ? ", helpers on the same CPU"
	                    : ", helpers on the others",
	         refused ? " (pinning refused)" : "");
}

int bench_helpers_start(unsigned count, struct bench_helpers **out, char *note, size_t len)
{
	struct bench_helpers *hs = calloc(1, sizeof(*hs) + count * sizeof(hs->tid[0]));
	if (!hs)
		return -ENOMEM;
	for (; hs->count < count; hs->count++) {
		int err = pthread_create(&hs->tid[hs->count], NULL, helper_main, hs);
		if (err) {
			bench_helpers_stop(hs);
			return -err;
		}
	}
	pin_all(hs, note, len);
	while (atomic_load(&hs->running) < hs->count)
		sched_yield(); /* timing starts once every helper is live */
	*out = hs;
	return 0;
}

void bench_helpers_stop(struct bench_helpers *hs)
{
	if (!hs)
		return;
	atomic_store(&hs->stop, true);
	for (unsigned i = 0; i < hs->count; i++)
		pthread_join(hs->tid[i], NULL);
	free(hs);
}
