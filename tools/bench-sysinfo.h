/* SPDX-License-Identifier: MIT */
/* purge-bench: the machine facts every result is printed with. */
#ifndef BENCH_SYSINFO_H
#define BENCH_SYSINFO_H

#include <stddef.h>

struct bench_machine {
	char cpu[128];       /* /proc/cpuinfo "model name" */
	long cores;          /* online CPUs */
	char kernel[128];    /* uname -r (65 bytes in utsname) */
	char arch[65];       /* uname -m (utsname field size) */
	char thp[32];        /* selected THP mode, e.g. "madvise" */
	long page;           /* bytes */
	const char *backend; /* what purge_backend(advice) chose */
	char load_start[64]; /* /proc/loadavg's three averages, before the sweep */
	char load_end[64];   /* and after it (bench_loadavg) */
};

/* Fill *m; fields that cannot be read say "unknown". */
void bench_machine_read(struct bench_machine *m, int advice);

/* The 1, 5 and 15 minute load averages, "unknown" if unreadable: other
 * work on the machine is the first suspect for a noisy number. */
void bench_loadavg(char *out, size_t len);

#endif
