/* SPDX-License-Identifier: MIT */
/*
 * lifetime: ends the process one way or another, for a check that a
 * preloaded allocator (and the threads it runs) changes neither when a
 * process ends nor its exit status, compared with another allocator.
 * Plain malloc/free: runs under any allocator.
 *
 *   lifetime MODE [N]
 *
 *   return N            main returns N
 *   pthread_exit        main calls pthread_exit, no other thread: 0
 *   pthread_exit-now    the same at once after the first release: 0
 *   last-return         main calls pthread_exit; a thread joins it, then
 *                       returns, last: 0
 *   last-pthread-exit   the same, the thread calls pthread_exit: 0
 *   main-last           a thread returns, then main calls pthread_exit: 0
 *   exit N              a thread calls exit(N) while main waits: N
 *   _exit N             a thread calls _exit(N): N
 *   exec N              a thread execs `lifetime return N`: N
 *   fork-MODE [N]       a thread forks; in the child, whose only thread it
 *                       is, it ends as MODE says (return: from its start
 *                       routine, 0; pthread_exit: 0; exit, _exit, exec: N);
 *                       the parent exits with the child's status, or with
 *                       124 after killing a child that has not ended
 *                       within 15 s
 *
 * Before it ends, every process (the child too) releases memory (8 MiB,
 * freed, and 8 MiB allocated again: an allocator's extent hooks see a
 * release and an allocation) and writes "lifetime[PID]: allocator thread:
 * yes" or "no" to stderr, yes when a thread with another name than the
 * program's runs in it (jemalloc's background thread; waiting up to
 * $LIFETIME_WAIT_THREAD_MS ms for one, default 0), then
 * "lifetime[PID]: end MODE"
 * just before its last step.  An atexit handler writes
 * "lifetime[PID]: atexit on the main thread" (or "on another thread"):
 * glibc runs exit(0) on the thread that ended last.  Exit 2 on bad
 * arguments.
 */
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>

#include "workload.h"

#define CHILD_WAIT_MS 15000

static const char *mode;
static int status_arg;
static const char *worker_how = "return"; /* how worker() ends */

/* Whether a thread of this process has a name other than the main
 * thread's: one the allocator runs (jemalloc's background thread names
 * itself jemalloc_bg_thd); this program's threads keep the name. */
static bool foreign_thread(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	char own[32] = "";
	bool seen = false;
	int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, own, sizeof(own) - 1) < 0)
			own[0] = 0;
		close(fd);
	}
	while (d && !seen && (e = readdir(d)) != NULL) {
		char path[64], comm[32] = "";
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%.20s/comm", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, comm, sizeof(comm) - 1) : -1;
		if (fd >= 0)
			close(fd);
		seen = n > 0 && strcmp(comm, own) != 0;
	}
	if (d)
		closedir(d);
	return seen;
}

/* A release and an allocation; then whether the allocator runs a thread:
 * waiting up to $LIFETIME_WAIT_THREAD_MS for it (a thread names itself once
 * it runs, a little after it is created). */
static void release_and_look(void)
{
	const char *wait = getenv("LIFETIME_WAIT_THREAD_MS");
	long wait_ms = wait ? strtol(wait, NULL, 10) : 0;

	char *volatile p = malloc(8 << 20);

	if (p)
		memset(p, 1, 8 << 20);
	free(p);
	p = malloc(8 << 20);
	if (p)
		p[0] = 1;
	bool seen = foreign_thread();
	for (long i = 0; !seen && i < wait_ms; i++) {
		usleep(1000);
		seen = foreign_thread();
	}
	free(p);
	fprintf(stderr, "lifetime[%d]: allocator thread: %s\n", (int)getpid(), seen ? "yes" : "no");
}

static void say_atexit(void)
{
	fprintf(stderr, "lifetime[%d]: atexit on %s thread\n", (int)getpid(),
	        gettid() == getpid() ? "the main" : "another");
}

static void say_end(const char *how)
{
	fprintf(stderr, "lifetime[%d]: end %s\n", (int)getpid(), how);
}

/* How `how` ends the calling thread, or the process. */
static void *end_as(const char *how)
{
	char n[16], self[] = "/proc/self/exe";

	say_end(how);
	if (!strcmp(how, "exit"))
		exit(status_arg);
	if (!strcmp(how, "_exit"))
		_exit(status_arg);
	if (!strcmp(how, "exec")) {
		snprintf(n, sizeof(n), "%d", status_arg);
		execl(self, "lifetime", "return", n, (char *)NULL);
		_exit(126);
	}
	if (!strcmp(how, "pthread_exit"))
		pthread_exit(NULL);
	return NULL; /* "return": from the start routine */
}

/* The parent of fork-MODE: waits for the child, at most CHILD_WAIT_MS. */
static int wait_child(pid_t pid)
{
	int st;

	for (int ms = 0; ms < CHILD_WAIT_MS; ms++) {
		pid_t got = waitpid(pid, &st, WNOHANG);
		if (got == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (got < 0)
			return 3;
		usleep(1000);
	}
	fprintf(stderr, "lifetime: child %d still there after %d ms: killed\n", (int)pid,
	        CHILD_WAIT_MS);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return 124;
}

static void *forker(void *arg)
{
	(void)arg;
	pid_t pid = fork();

	if (pid < 0)
		return (void *)(intptr_t)3;
	if (pid > 0)
		return (void *)(intptr_t)wait_child(pid);
	release_and_look();
	return end_as(mode + 5);
}

static pthread_t main_thread;
static bool after_main; /* worker(): end only once main has ended */

static void *worker(void *late)
{
	if (late)
		release_and_look(); /* from a second thread */
	if (after_main)
		pthread_join(main_thread, NULL); /* main ends with pthread_exit */
	return end_as(worker_how);
}

/* The modes that end on a thread of their own. */
static int threaded(void)
{
	static const struct {
		const char *mode, *how;
		bool late;
	} table[] = {{"last-return", "return", false},
	             {"last-pthread-exit", "pthread_exit", true},
	             {"exit", "exit", true},
	             {"_exit", "_exit", false},
	             {"exec", "exec", true}};
	pthread_t t;

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (strcmp(mode, table[i].mode))
			continue;
		worker_how = table[i].how;
		main_thread = pthread_self();
		after_main = !strncmp(mode, "last-", 5);
		if (!table[i].late)
			release_and_look(); /* before there is a second thread */
		if (pthread_create(&t, NULL, worker, table[i].late ? &t : NULL))
			return 3;
		if (!strncmp(mode, "last-", 5)) {
			say_end("main: pthread_exit");
			pthread_exit(NULL);
		}
		pthread_join(t, NULL); /* exit, _exit and exec end it here */
		return 3;
	}
	return 2;
}

int main(int argc, char **argv)
{
	pthread_t t;
	void *ret;

	if (argc < 2 || wants_help(argc, argv)) {
		fprintf(argc < 2 ? stderr : stdout, "usage: lifetime MODE [N] (see lifetime.c)\n");
		return argc < 2 ? 2 : 0;
	}
	mode = argv[1];
	status_arg = argc > 2 ? atoi(argv[2]) : 0;
	atexit(say_atexit);
	if (!strcmp(mode, "pthread_exit-now")) {
		free(malloc(8 << 20)); /* a release */
		end_as("pthread_exit");
	}
	if (!strcmp(mode, "return") || !strcmp(mode, "pthread_exit")) {
		release_and_look();
		if (mode[0] == 'p')
			end_as("pthread_exit");
		say_end("return");
		return status_arg;
	}
	if (!strcmp(mode, "main-last")) {
		release_and_look();
		if (pthread_create(&t, NULL, worker, NULL) || pthread_join(t, NULL))
			return 3;
		end_as("pthread_exit");
	}
	if (!strncmp(mode, "fork-", 5)) {
		release_and_look();
		if (pthread_create(&t, NULL, forker, NULL) || pthread_join(t, &ret))
			return 3;
		return (int)(intptr_t)ret;
	}
	return threaded();
}
