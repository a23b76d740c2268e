/* SPDX-License-Identifier: MIT */
/*
 * fork-storm: fork() over and over while other threads allocate hard.
 *
 * T threads malloc and free chunks of 64 KiB to 4 MiB (each one an extent
 * of its own, so the allocator's extent hooks run all the time) while the
 * main thread forks N times.  Each child mallocs, writes, frees, asks the
 * purge_jemalloc shim for its stats when the shim is there, and exits 0.
 * A lock left held across fork() hangs a child (an alarm ends it, after it
 * writes where its thread was: reported as a failure) or the parent (the
 * caller's timeout catches that).
 *
 * Plain malloc/free: runs under any allocator.  Exit 0 when every child
 * exited 0.
 *
 *   fork-storm [-t threads] [-n forks]
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILD_ALARM_S 20

static atomic_bool stop;
static atomic_uint_fast64_t rounds;

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* 64 KiB .. 4 MiB, a few live at a time so that frees come out of order. */
static void *churn(void *arg)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull * ((uintptr_t)arg + 1);
	char *live[4] = {0};

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		unsigned k = (unsigned)(next(&seed) % 4);
		size_t size = ((size_t)1 << 16) << (next(&seed) % 7);
		free(live[k]);
		live[k] = malloc(size);
		if (live[k]) {
			live[k][0] = 1;
			live[k][size - 1] = 1;
		}
		atomic_fetch_add_explicit(&rounds, 1, memory_order_relaxed);
	}
	for (unsigned k = 0; k < 4; k++)
		free(live[k]);
	return NULL;
}

/* A hung child says where its thread is stuck (the frames, as
 * object(+offset) for addr2line), then exits 14.  backtrace() was called
 * once before the first fork, so it loads nothing here; should it hang
 * all the same, the second alarm kills the child (SA_RESETHAND). */
static void hung(int sig)
{
	static const char msg[] = "fork-storm: a child hung; its thread was in:\n";
	void *pc[64];

	(void)sig;
	alarm(5);
	(void)!write(2, msg, sizeof(msg) - 1);
	backtrace_symbols_fd(pc, backtrace(pc, 64), 2);
	_exit(14);
}

/* The child: one thread, the forking one; every lock must be usable. */
static _Noreturn void child(void)
{
	int (*stats)(char *, size_t, unsigned);
	void *sym = dlsym(RTLD_DEFAULT, "purge_jemalloc_stats");
	char buf[2048];
	struct sigaction sa = {.sa_handler = hung, .sa_flags = SA_RESETHAND};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm(CHILD_ALARM_S);
	char *big = malloc((size_t)3 << 20), *small = malloc(100);
	if (!big || !small)
		_exit(2);
	memset(big, 0x5a, (size_t)3 << 20);
	memset(small, 0x5a, 100);
	free(big);
	free(small);
	if (sym) {
		memcpy(&stats, &sym, sizeof(stats));
		if (stats(buf, sizeof(buf), 0) <= 0)
			_exit(3);
	}
	_exit(0);
}

/* Asked for (-h, --help): to stdout, exit 0; a mistake: to stderr, exit 2. */
static int usage(FILE *f)
{
	fprintf(f, "usage: fork-storm [-t threads] [-n forks]\n"
	           "  -t  threads that allocate meanwhile, 1 to 64 (default 4)\n"
	           "  -n  forks, one after another (default 200)\n"
	           "  -h, --help  this text\n"
	           "Exit status: 0 every child exited 0, 1 some did not, 2 bad arguments.\n");
	return f == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
	unsigned threads = 4, forks = 200, bad = 0;
	pthread_t tid[64];
	int opt;

	/* getopt() cannot take a long option */
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help"))
			return usage(stdout);
	while ((opt = getopt(argc, argv, "t:n:h")) != -1) {
		switch (opt) {
		case 'h':
			return usage(stdout);
		case 't':
			threads = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'n':
			forks = (unsigned)strtoul(optarg, NULL, 10);
			break;
		default:
			return usage(stderr);
		}
	}
	if (threads < 1 || threads > 64) {
		fprintf(stderr, "fork-storm: 1 to 64 threads\n");
		return 2;
	}
	void *pc[4];
	backtrace(pc, 4); /* loads the unwinder now, not in a hung child */
	for (unsigned i = 0; i < threads; i++)
		if (pthread_create(&tid[i], NULL, churn, (void *)(uintptr_t)i)) {
			perror("pthread_create");
			return 2;
		}
	for (unsigned i = 0; i < forks; i++) {
		int st;
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			bad++;
			break;
		}
		if (pid == 0)
			child();
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "fork-storm: child %u: %s %d\n", i,
			        WIFSIGNALED(st) ? "killed by signal" : "exit status",
			        WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
			bad++;
		}
	}
	atomic_store(&stop, true);
	for (unsigned i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	printf("fork-storm: threads=%u forks=%u failed=%u rounds=%llu\n", threads, forks, bad,
	       (unsigned long long)atomic_load(&rounds));
	return bad ? 1 : 0;
}
