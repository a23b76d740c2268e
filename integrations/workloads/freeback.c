/* SPDX-License-Identifier: MIT */
/*
 * freeback: how soon does freed memory leave the resident set of a program
 * that then goes idle?  A plain malloc program: it never calls libpurge.
 *
 * It mallocs -a bytes in 1 MiB blocks and writes them, frees the first -f
 * bytes of them, then sleeps, reading RSS (/proc/self/statm) every 5 ms for
 * -w ms after the last free.  It prints when RSS had fallen by half of the
 * freed bytes and by -p percent of them.  Exit 0 when the -p mark was
 * reached within -w ms, 1 when not, 2 on bad arguments or no memory.
 * With -F it forks once the heap is written, and the child frees and
 * watches (the parent waits and exits with the child's status): memory
 * freed in a fork child comes back too.  With -P FIFO it writes a byte to
 * that FIFO after the frees, once something reads it: a stand-in for a
 * memory-pressure event, when $MEMORY_PRESSURE_WATCH names the FIFO (the
 * patched jemalloc's background thread watches it).  With -A it allocates
 * 64 KiB after the frees, and writes one byte of it: an extent allocation
 * of its own (larger than jemalloc's thread cache keeps).
 *
 *   freeback [-a bytes] [-f bytes] [-w ms] [-p percent] [-F] [-A] [-P fifo]
 */
#include <inttypes.h>
#include <sys/wait.h>

#include "workload.h"

#define BLOCK ((size_t)1 << 20)

struct args {
	uint64_t alloc, freed, watch_ms, pct;
	bool fork, again;
	const char *poke;
};

static uint64_t rss_bytes(int fd)
{
	char buf[128];
	unsigned long long size, res;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	if (sscanf(buf, "%llu %llu", &size, &res) != 2)
		return 0;
	return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

static bool parse_args(int argc, char **argv, struct args *a)
{
	int c;

	*a = (struct args){256 << 20, 232 << 20, 1500, 99, false, false, NULL};
	while ((c = getopt(argc, argv, "a:f:w:p:FAP:")) != -1) {
		if (c == 'F' || c == 'A' || c == 'P') {
			a->fork |= c == 'F';
			a->again |= c == 'A';
			a->poke = c == 'P' ? optarg : a->poke;
			continue;
		}
		uint64_t *field = c == 'a'   ? &a->alloc
		                  : c == 'f' ? &a->freed
		                  : c == 'w' ? &a->watch_ms
		                  : c == 'p' ? &a->pct
		                             : NULL;
		if (!field || !parse_size(optarg, field))
			return false;
	}
	return optind == argc && a->freed <= a->alloc && a->pct <= 100 && a->alloc >= BLOCK;
}

/* Prints the first time returned >= mark: "+ms" since the last free. */
static void watch(int fd, const struct args *a, uint64_t base, uint64_t t0, uint64_t *t_mark)
{
	uint64_t half = a->freed / 2, mark = a->freed / 100 * a->pct, t_half = 0, back = 0;
	struct timespec ts = {0, 5000000};

	*t_mark = 0;
	for (uint64_t t = t0; t - t0 <= a->watch_ms * 1000000; t = now_ns()) {
		uint64_t rss = rss_bytes(fd);
		back = rss < base ? base - rss : 0;
		if (!t_half && back >= half)
			t_half = t;
		if (!*t_mark && back >= mark)
			*t_mark = t;
		nanosleep(&ts, NULL);
	}
	printf("freeback: returned %" PRIu64 " MiB of %" PRIu64 " MiB freed (%.1f%%) after %" PRIu64
	       " ms; 50%% at %s%.0f ms, %" PRIu64 "%% at %s%.0f ms\n",
	       back >> 20, a->freed >> 20, a->freed ? 100.0 * (double)back / (double)a->freed : 0,
	       a->watch_ms, t_half ? "+" : ">", (double)((t_half ? t_half : now_ns()) - t0) / 1e6,
	       a->pct, *t_mark ? "+" : ">", (double)((*t_mark ? *t_mark : now_ns()) - t0) / 1e6);
}

/* Waits (up to 5 s) for a reader to open the FIFO (the allocator's thread
 * that watches it). */
static void poke(const char *fifo)
{
	struct timespec ts = {0, 10000000};
	int p = -1;

	for (int i = 0; i < 500 && p < 0; i++)
		if ((p = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0 && errno == ENXIO)
			nanosleep(&ts, NULL);
	if (p < 0 || write(p, "x", 1) != 1)
		perror(fifo);
	if (p >= 0)
		close(p);
}

/* In the parent: waits for the child and exits with its status. */
static bool forked_parent(void)
{
	int status;

	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return true;
	if (pid == 0)
		return false;
	if (waitpid(pid, &status, 0) != pid)
		return true;
	exit(WIFEXITED(status) ? WEXITSTATUS(status) : 3);
}

int main(int argc, char **argv)
{
	void *(*volatile alloc)(size_t);
	struct args a;
	uint64_t t_mark;

	alloc = malloc; /* the address, as seen from this executable */
	if (!parse_args(argc, argv, &a)) {
		fprintf(stderr, "usage: freeback [-a bytes] [-f bytes] [-w ms] [-p percent] [-F] "
		                "[-A] [-P fifo]\n");
		return 2;
	}
	size_t n = (size_t)(a.alloc / BLOCK), nf = (size_t)(a.freed / BLOCK);
	char **blk = calloc(n, sizeof(*blk));
	for (size_t i = 0; blk && i < n; i++)
		if ((blk[i] = alloc(BLOCK)) != NULL)
			memset(blk[i], 0x5a, BLOCK);
	if (!blk || !blk[n - 1])
		return 2;
	printf("freeback: malloc=%s alloc=%" PRIu64 " MiB free=%" PRIu64 " MiB watch=%" PRIu64
	       " ms mark=%" PRIu64 "%%\n",
	       malloc_name(), a.alloc >> 20, a.freed >> 20, a.watch_ms, a.pct);
	if (a.fork && forked_parent())
		return 3;
	/* opened here: /proc/self is whoever opens it */
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 2;
	uint64_t base = rss_bytes(fd);
	for (size_t i = 0; i < nf; i++)
		free(blk[i]);
	char *volatile again = a.again ? alloc(64 << 10) : NULL;
	if (again)
		again[0] = 1;
	if (a.poke)
		poke(a.poke);
	watch(fd, &a, base, now_ns(), &t_mark);
	fflush(stdout);
	return t_mark ? 0 : 1;
}
