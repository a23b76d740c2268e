/* SPDX-License-Identifier: MIT */
/*
 * idle: a burst of frees, then an idle process: how much stays resident.
 * Run it under a preloaded mimalloc (stock or patched) and compare.
 *
 *   idle [-m MIB] [-s MS] [-g MS] [OPTION=VALUE...]
 *
 * Each OPTION=VALUE is given to mi_option_set (found with dlsym) first,
 * before anything else is allocated: purge_delay (mimalloc's own),
 * purge_batch, purge_batch_size (the patched v3 library's options).
 * Then MIB MiB (default 320) of blocks of 64 KiB..8 MiB are allocated and
 * written, and all freed at once (with -g, MS ms apart: each free then
 * finds the decommits the earlier ones left due); then the process sleeps
 * -s MS ms (default 1000) without a call into the allocator and reads its
 * resident set
 * (/proc/self/statm).  Prints one line:
 *   idle: rss_kib before B peak P idle I
 * Exit 0, 2 usage, 77 no mimalloc preloaded.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* mi_option_t of the patched v3.4.3 (include/mimalloc.h): the series' two
 * options come after mi_option_arena_is_numa_local (46) */
static const struct {
	const char *name;
	int option;
} options[] = {
    {"purge_delay", 15},
    {"purge_batch", 47},
    {"purge_batch_size", 48},
};

/* resident KiB, read without the allocator (no stdio) */
static long rss_kib(void)
{
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	long size = 0, resident = 0;
	if (sscanf(buf, "%ld %ld", &size, &resident) != 2)
		return -1;
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

#define MAXBLOCKS 4096

int main(int argc, char **argv)
{
	long mib = 320, ms = 1000, gap = 0;
	int i = 1;
	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (strcmp(argv[i], "-m") == 0)
			mib = atol(argv[i + 1]);
		else if (strcmp(argv[i], "-s") == 0)
			ms = atol(argv[i + 1]);
		else if (strcmp(argv[i], "-g") == 0)
			gap = atol(argv[i + 1]);
		else
			break;
	}
	void (*set)(int, long);
	*(void **)&set = dlsym(RTLD_DEFAULT, "mi_option_set");
	if (set == NULL) {
		fprintf(stderr, "idle: no mimalloc preloaded (no mi_option_set)\n");
		return 77;
	}
	for (; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');
		size_t k = 0, n = sizeof(options) / sizeof(options[0]);
		while (eq != NULL && k < n &&
		       (strlen(options[k].name) != (size_t)(eq - argv[i]) ||
		        strncmp(argv[i], options[k].name, (size_t)(eq - argv[i])) != 0))
			k++;
		if (eq == NULL || k == n || mib <= 0 || ms < 0 || gap < 0) {
			fprintf(stderr,
			        "usage: idle [-m MIB] [-s MS] [-g MS] [OPTION=VALUE...] (options: "
			        "purge_delay, purge_batch, purge_batch_size)\n");
			return 2;
		}
		set(options[k].option, atol(eq + 1));
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	long before = rss_kib();
	static void *b[MAXBLOCKS];
	size_t want = (size_t)mib << 20, got = 0;
	unsigned nb = 0;
	while (got < want && nb < MAXBLOCKS) {
		/* 64 KiB .. 8 MiB: medium, large and huge blocks */
		size_t sz = (size_t)64 << (10 + nb % 8);
		if (sz > want - got)
			sz = want - got;
		b[nb] = malloc(sz);
		if (b[nb] == NULL)
			abort();
		memset(b[nb], 0x5a, sz);
		got += sz;
		nb++;
	}
	long peak = rss_kib();
	struct timespec g = {gap / 1000, (gap % 1000) * 1000000L};
	for (unsigned k = 0; k < nb; k++) {
		free(b[k]);
		if (gap > 0)
			nanosleep(&g, NULL);
	}
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
	long idle = rss_kib();
	printf("idle: rss_kib before %ld peak %ld idle %ld\n", before, peak, idle);
	return 0;
}
