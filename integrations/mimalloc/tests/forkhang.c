/* SPDX-License-Identifier: MIT */
/*
 * forkhang: fork() under a preloaded allocator, with pthread_atfork
 * handlers registered before the allocator's (atfork-first.c, a library
 * this program links, initialised before LD_PRELOAD ones).  Stock mimalloc
 * holds no lock across fork, so neither case may hang:
 *
 *   forkhang child-malloc   threads allocate and free large blocks (the
 *                           purge queue busy) while the main thread forks
 *                           N times; an atfork child handler registered
 *                           first allocates and frees in each child;
 *   forkhang lock-order     a thread allocates and frees while it holds
 *                           atfork_first_lock, which the first-registered
 *                           prepare handler takes (so it runs after the
 *                           allocator's prepare handlers), while the main
 *                           thread forks N times.
 *
 * Each child exits at once (after the handlers).  An alarm of 30 s ends a
 * hung run: it kills the child of the moment (which may be the one stuck)
 * and exits 3.  Exit 0 pass, 1 a child failed, 2 usage, 3 hung.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern pthread_mutex_t atfork_first_lock;
extern volatile int atfork_first_malloc_in_child;
extern volatile int atfork_first_registered;

static atomic_bool stop;
static int locked;
static volatile sig_atomic_t child;

static void hung(int sig)
{
	(void)sig;
	static const char msg[] = "forkhang: HUNG (30 s): killing the child and giving up\n";
	if (child > 0)
		kill(child, SIGKILL);
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

static void *churn(void *arg)
{
	unsigned n = (unsigned)(size_t)arg;
	while (!atomic_load(&stop)) {
		if (locked)
			pthread_mutex_lock(&atfork_first_lock);
		for (unsigned i = 0; i < 4; i++) {
			size_t sz = ((size_t)1 << 20) + ((size_t)(n + i) % 3) * 65536;
			char *p = malloc(sz);
			if (p == NULL)
				abort();
			memset(p, 0x22, 4096);
			p[sz - 1] = 1;
			free(p);
		}
		if (locked)
			pthread_mutex_unlock(&atfork_first_lock);
		n++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3 ||
	    (strcmp(argv[1], "child-malloc") != 0 && strcmp(argv[1], "lock-order") != 0)) {
		fprintf(stderr, "usage: forkhang child-malloc|lock-order [N]\n");
		return 2;
	}
	unsigned forks = argc == 3 ? (unsigned)atoi(argv[2]) : 200;
	if (!atfork_first_registered) {
		fprintf(stderr, "forkhang: atfork-first registered nothing\n");
		return 1;
	}
	atfork_first_malloc_in_child = strcmp(argv[1], "child-malloc") == 0;
	locked = !atfork_first_malloc_in_child;
	signal(SIGALRM, hung);
	alarm(30);
	pthread_t t[2];
	unsigned nt = locked ? 1 : 2;
	for (unsigned i = 0; i < nt; i++)
		if (pthread_create(&t[i], NULL, churn, (void *)(size_t)i) != 0)
			abort();
	int bad = 0;
	for (unsigned k = 0; k < forks && !bad; k++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			bad = 1;
			break;
		}
		if (pid == 0)
			_exit(0);
		child = pid;
		int st = 0;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "forkhang: fork %u: child status %#x\n", k, st);
			bad = 1;
		}
	}
	atomic_store(&stop, true);
	for (unsigned i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
	printf("forkhang %s: %u forks, %s\n", argv[1], forks, bad ? "FAILED" : "ok");
	return bad;
}
