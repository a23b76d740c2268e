/* SPDX-License-Identifier: MIT */
/*
 * fork-storm: fork() over and over while other threads allocate hard.
 *
 * T threads malloc and free chunks of 64 KiB to 4 MiB (each one an extent
 * of its own, so the allocator's extent hooks run all the time) while the
 * main thread forks N times.  Each child mallocs, writes, frees, refreshes
 * jemalloc's stats (mallctl "epoch") when it runs under jemalloc, and
 * exits 0.
 * A lock left held across fork() hangs a child (an alarm ends it, after it
 * writes where its thread was: reported as a failure) or the parent (the
 * caller's timeout catches that).
 *
 * The stress variant (-f, -a): F of the threads fork instead of the main
 * thread, all at once, while the T others allocate; each child makes A
 * more allocations.  The parent gives every child -w seconds: one that is
 * not done by then is counted as hung (hung=), shown with gdb's
 * backtraces when FORK_STORM_GDB=1, and killed.  Without FORK_STORM_GDB
 * the child's own alarm, at the same time, prints where its thread was.
 *
 * Plain malloc/free: runs under any allocator.  Exit 0 when every child
 * exited 0.
 *
 *   fork-storm [-t threads] [-n forks] [-f forkers] [-a allocs] [-w seconds]
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
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_bool stop;
static atomic_uint_fast64_t rounds;
static atomic_uint bad, hangs, forked;
static unsigned forks = 200, child_allocs, wait_s = 20, lg_sizes = 7;
static bool use_gdb;
static atomic_ulong vm_start; /* VmSize in KiB, at the first tenth of the forks */

/* The process's address space (VmSize), KiB; 0 if unknown. */
static unsigned long vm_kib(void)
{
	char line[128];
	unsigned long kib = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %lu", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

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
		size_t size = ((size_t)1 << 16) << (next(&seed) % lg_sizes);
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
static _Noreturn void child(uint64_t seed)
{
	int (*mallctl)(const char *, void *, size_t *, void *, size_t);
	void *sym = dlsym(RTLD_DEFAULT, "mallctl");
	uint64_t epoch = 1;
	struct sigaction sa = {.sa_handler = hung, .sa_flags = SA_RESETHAND};

	if (!use_gdb) {
		sigemptyset(&sa.sa_mask);
		sigaction(SIGALRM, &sa, NULL);
		alarm(wait_s);
	}
	char *big = malloc((size_t)3 << 20), *small = malloc(100);
	if (!big || !small)
		_exit(2);
	memset(big, 0x5a, (size_t)3 << 20);
	memset(small, 0x5a, 100);
	free(big);
	free(small);
	for (unsigned i = 0; i < child_allocs; i++) {
		size_t size = ((size_t)1 << 16) << (next(&seed) % lg_sizes);
		char *p = malloc(size);
		if (!p)
			_exit(2);
		p[0] = p[size - 1] = 1;
		free(p);
	}
	if (sym) {
		memcpy(&mallctl, &sym, sizeof(mallctl));
		if (mallctl("epoch", NULL, NULL, &epoch, sizeof(epoch)) != 0)
			_exit(3);
	}
	_exit(0);
}

/* Waits -w seconds for the child; then it is hung: its stacks (gdb) and
 * SIGKILL.  Returns its wait status. */
static int wait_child(pid_t pid, unsigned i)
{
	int st = 0, pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	char cmd[128];

	if (pfd >= 0) {
		struct pollfd p = {pfd, POLLIN, 0};
		int n;
		while ((n = poll(&p, 1, (int)wait_s * 1000 + (use_gdb ? 0 : 5000))) < 0)
			;
		if (n == 0) {
			fprintf(stderr, "fork-storm: child %u (pid %d) hung\n", i, (int)pid);
			if (use_gdb) {
				snprintf(cmd, sizeof(cmd),
				         "gdb -p %d -batch -ex 'thread apply all bt' 1>&2",
				         (int)pid);
				(void)!system(cmd);
			}
			kill(pid, SIGKILL);
			atomic_fetch_add(&hangs, 1);
		}
		close(pfd);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 14)
		atomic_fetch_add(&hangs, 1); /* its own alarm */
	return st;
}

/* Forks until `forks` children were started, by whichever thread. */
static void *forker(void *arg)
{
	uint64_t seed = 0x2545f4914f6cdd1dull * ((uintptr_t)arg + 1);

	for (;;) {
		unsigned i = atomic_fetch_add(&forked, 1);
		if (i >= forks)
			return NULL;
		if (i == forks / 10)
			atomic_store(&vm_start, vm_kib());
		next(&seed);
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			atomic_fetch_add(&bad, 1);
			return NULL;
		}
		if (pid == 0)
			child(seed);
		int st = wait_child(pid, i);
		if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "fork-storm: child %u: %s %d\n", i,
			        st >= 0 && WIFSIGNALED(st) ? "killed by signal" : "exit status",
			        st < 0            ? -1
			        : WIFSIGNALED(st) ? WTERMSIG(st)
			                          : WEXITSTATUS(st));
			atomic_fetch_add(&bad, 1);
		}
	}
}

/* Asked for (-h, --help): to stdout, exit 0; a mistake: to stderr, exit 2. */
static int usage(FILE *f)
{
	fprintf(f,
	        "usage: fork-storm [-t threads] [-n forks] [-f forkers] [-a allocs] [-w seconds]\n"
	        "  -t  threads that allocate meanwhile, 1 to 64 (default 4)\n"
	        "  -n  forks, one after another in each forking thread (default 200 in all)\n"
	        "  -f  threads that fork, all at once, 0 to 64 (default 0: the main thread)\n"
	        "  -a  more allocations of 64 KiB to 4 MiB in each child (default 0)\n"
	        "  -w  seconds a child may take before it counts as hung (default 20)\n"
	        "  -h, --help  this text\n"
	        "FORK_STORM_GDB=1: a hung child's threads are shown with gdb.\n"
	        "Exit status: 0 every child exited 0, 1 some did not, 2 bad arguments.\n");
	return f == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
	unsigned threads = 4, forkers = 0;
	pthread_t tid[64], ftid[64];
	int opt;

	/* getopt() cannot take a long option */
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help"))
			return usage(stdout);
	while ((opt = getopt(argc, argv, "t:n:f:a:w:m:h")) != -1) {
		switch (opt) {
		case 'h':
			return usage(stdout);
		case 't':
			threads = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'n':
			forks = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'f':
			forkers = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'a':
			child_allocs = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'w':
			wait_s = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'm':
			lg_sizes = (unsigned)strtoul(optarg, NULL, 10);
			break;
		default:
			return usage(stderr);
		}
	}
	if (threads < 1 || threads > 64 || forkers > 64 || wait_s < 1 || wait_s > 3600 ||
	    lg_sizes < 1 || lg_sizes > 12) {
		fprintf(stderr,
		        "fork-storm: 1 to 64 threads, 0 to 64 forkers, 1 to 3600 s, -m 1 to 12\n");
		return 2;
	}
	use_gdb = getenv("FORK_STORM_GDB") && !strcmp(getenv("FORK_STORM_GDB"), "1");
	void *pc[4];
	backtrace(pc, 4); /* loads the unwinder now, not in a hung child */
	for (unsigned i = 0; i < threads; i++)
		if (pthread_create(&tid[i], NULL, churn, (void *)(uintptr_t)i)) {
			perror("pthread_create");
			return 2;
		}
	if (forkers == 0) {
		forker(NULL);
	} else {
		for (unsigned i = 0; i < forkers; i++)
			if (pthread_create(&ftid[i], NULL, forker, (void *)(uintptr_t)i)) {
				perror("pthread_create");
				return 2;
			}
		for (unsigned i = 0; i < forkers; i++)
			pthread_join(ftid[i], NULL);
	}
	atomic_store(&stop, true);
	for (unsigned i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	unsigned done = atomic_load(&forked) < forks ? atomic_load(&forked) : forks;
	printf("fork-storm: threads=%u forkers=%u forks=%u failed=%u hung=%u rounds=%llu\n",
	       threads, forkers, done, atomic_load(&bad), atomic_load(&hangs),
	       (unsigned long long)atomic_load(&rounds));
	/* how much the address space grew from the first tenth of the forks
	 * to the end */
	unsigned long vm0 = atomic_load(&vm_start), vm1 = vm_kib();
	printf("fork-storm: vm_start_mib=%lu vm_end_mib=%lu vm_grew_mib=%lu\n", vm0 >> 10,
	       vm1 >> 10, vm1 > vm0 ? (vm1 - vm0) >> 10 : 0);
	return atomic_load(&bad) ? 1 : 0;
}
