/* SPDX-License-Identifier: MIT */
/*
 * je-fds: a program that closes the descriptors it did not open, as a
 * daemon does, with a jemalloc preloaded and MALLOC_CONF=background_thread:true
 * (issue 35, item 1).  It waits until jemalloc's background thread runs
 * (and, in the patched jemalloc, until thread 0 holds its descriptors), then
 *
 *   closefrom  closes every descriptor from 3 up (close_range(3, ~0U, 0);
 *              a loop of close() where the kernel has none);
 *   closeloop  closes 3 to 1023 one by one;
 *   dup2       puts one file of its own over every descriptor from 3 up
 *              that is open;
 *   fork       forks: the child does `closefrom`, the parent waits for it
 *              and then checks its own background thread still stops;
 *
 * then opens 10 files of its own, writes 16 bytes to each, makes jemalloc
 * wake its background thread (arenas.create, a few MiB allocated and freed,
 * arena.<i>.decay), and turns the background thread off
 * (mallctl("background_thread", false)), timed, under a 20 s alarm.  Every
 * file must still be open and hold its 16 bytes, and no more.
 *
 * usage: je-fds MODE [DIR]   (DIR: where the files go, default $TMPDIR or /tmp)
 * Prints one line.  Exit 0: every byte kept, the call returned within 1 s;
 * 1: a file lost or gained bytes, or was closed; 2: the call took more than
 * 1 s; 3: it did not return in 20 s (the alarm); 4: usage or setup error;
 * 77: no jemalloc with a background thread is loaded.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NFILES     10
#define FILE_BYTES 16

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
static mallctl_fn mallctl_p;
static int files[NFILES];
static char paths[NFILES][PATH_MAX];

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL: mallctl(\"background_thread\", false) "
	                          "did not return in 20 s\n";
	(void)sig;
	if (write(1, msg, sizeof(msg) - 1) < 0) {
	}
	_exit(3);
}

/* Does this process hold an eventfd (the patched thread 0's)? */
static bool holds_eventfd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	bool found = false;
	char path[300], link[64];

	if (!d)
		return false;
	while (!found && (e = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(path, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = 0;
			found = strstr(link, "eventfd") != NULL;
		}
	}
	closedir(d);
	return found;
}

static void close_from_3(void)
{
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0)
		return;
#endif
	for (int fd = 3; fd < 65536; fd++)
		close(fd);
}

static void bg_set(bool on)
{
	if (mallctl_p("background_thread", NULL, NULL, &on, sizeof(on)) != 0) {
		printf("FAIL: mallctl background_thread %d\n", on);
		exit(4);
	}
}

/* Runs the background thread until thread 0 is up (its descriptors too). */
static void wait_for_thread(bool patched)
{
	for (int i = 0; i < 400; i++) {
		size_t n = 0, sz = sizeof(n);
		uint64_t epoch = 1;
		mallctl_p("epoch", NULL, NULL, &epoch, sizeof(epoch));
		mallctl_p("stats.background_thread.num_threads", &n, &sz, NULL, 0);
		if (n > 0 && (!patched || holds_eventfd()))
			return;
		usleep(5000);
	}
}

/* Opens and fills the program's files (numbers from 3 up, once closed). */
static void open_files(const char *dir)
{
	for (int i = 0; i < NFILES; i++) {
		snprintf(paths[i], sizeof(paths[i]), "%s/je-fds.%d.%d", dir, (int)getpid(), i);
		files[i] = open(paths[i], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (files[i] < 0) {
			printf("FAIL: open %s: %s\n", paths[i], strerror(errno));
			exit(4);
		}
		char b[FILE_BYTES];
		memset(b, 'a' + i, sizeof(b));
		if (write(files[i], b, sizeof(b)) != (ssize_t)sizeof(b)) {
			printf("FAIL: write %s\n", paths[i]);
			exit(4);
		}
	}
}

/* Makes jemalloc wake its background thread, a few times. */
static void churn(void)
{
	unsigned ind;
	size_t sz = sizeof(ind);
	char name[64];

	for (int r = 0; r < 4; r++) {
		if (mallctl_p("arenas.create", &ind, &sz, NULL, 0) == 0) {
			snprintf(name, sizeof(name), "arena.%u.decay", ind);
			mallctl_p(name, NULL, NULL, NULL, 0);
		}
		for (int i = 0; i < 16; i++) {
			void *p = malloc((size_t)(i + 1) << 18);
			if (p)
				memset(p, 1, (size_t)(i + 1) << 18);
			free(p);
		}
		usleep(20000);
	}
}

/* Each file still open and holding its 16 bytes, no more: 0, else 1. */
static int check_files(const char *who)
{
	int bad = 0;
	for (int i = 0; i < NFILES; i++) {
		struct stat st;
		char b[FILE_BYTES * 2];
		if (fcntl(files[i], F_GETFD) < 0) {
			printf("FAIL: %s: file %d (fd %d) was closed\n", who, i, files[i]);
			bad = 1;
			continue;
		}
		if (fstat(files[i], &st) != 0 || st.st_size != FILE_BYTES) {
			printf("FAIL: %s: file %d (fd %d) holds %lld bytes, not %d\n", who, i,
			       files[i], (long long)st.st_size, FILE_BYTES);
			bad = 1;
			continue;
		}
		ssize_t n = pread(files[i], b, sizeof(b), 0);
		for (ssize_t k = 0; k < n; k++) {
			if (b[k] != 'a' + i) {
				printf("FAIL: %s: file %d (fd %d): byte %zd changed\n", who, i,
				       files[i], k);
				bad = 1;
				break;
			}
		}
	}
	for (int i = 0; i < NFILES; i++)
		unlink(paths[i]);
	return bad;
}

/* background_thread:false under a 20 s alarm; how long it took, in ms. */
static double stop_timed(void)
{
	signal(SIGALRM, on_alarm);
	alarm(20);
	double t0 = now_ms();
	bg_set(false);
	double ms = now_ms() - t0;
	alarm(0);
	return ms;
}

/* After the descriptors were closed: files, churn, stop; the exit status. */
static int after_close(const char *who, const char *dir)
{
	open_files(dir);
	churn();
	double ms = stop_timed();
	int bad = check_files(who);
	uint64_t lost = 0, reopened = 0, epoch = 1;
	size_t sz = sizeof(lost);
	mallctl_p("epoch", NULL, NULL, &epoch, sizeof(epoch));
	mallctl_p("stats.background_thread.fds_lost", &lost, &sz, NULL, 0);
	mallctl_p("stats.background_thread.fds_reopened", &reopened, &sz, NULL, 0);
	printf("%s %s: background_thread:false took %.1f ms; fds_lost %llu fds_reopened %llu\n",
	       bad ? "FAIL" : (ms > 1000 ? "FAIL (slow)" : "ok"), who, ms, (unsigned long long)lost,
	       (unsigned long long)reopened);
	fflush(stdout);
	return bad ? 1 : ms > 1000 ? 2 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s closefrom|closeloop|dup2|fork [DIR]\n", argv[0]);
		return 4;
	}
	const char *mode = argv[1];
	const char *dir = argc > 2 ? argv[2] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	mallctl_p = (mallctl_fn)dlsym(RTLD_DEFAULT, "mallctl");
	bool on = false;
	size_t sz = sizeof(on);
	if (!mallctl_p || mallctl_p("background_thread", &on, &sz, NULL, 0) != 0 || !on) {
		printf("SKIP: no jemalloc with background_thread:true loaded\n");
		return 77;
	}
	bool patched = mallctl_p("opt.purge_pressure", &on, &sz, NULL, 0) == 0 && on;
	wait_for_thread(patched);

	if (!strcmp(mode, "closefrom")) {
		close_from_3();
		return after_close(mode, dir);
	}
	if (!strcmp(mode, "closeloop")) {
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		return after_close(mode, dir);
	}
	if (!strcmp(mode, "dup2")) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/je-fds.%d.over", dir, (int)getpid());
		int over = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (over < 0)
			return 4;
		unlink(p);
		int top = fcntl(over, F_DUPFD_CLOEXEC, 1000);
		close(over);
		for (int fd = 3; fd < 1000; fd++)
			if (fcntl(fd, F_GETFD) >= 0)
				dup3(top, fd, O_CLOEXEC);
		/* The file put over them: it must stay empty. */
		open_files(dir);
		churn();
		double ms = stop_timed();
		struct stat st;
		int bad = check_files(mode);
		if (fstat(top, &st) != 0 || st.st_size != 0) {
			printf("FAIL: dup2: the file put over the descriptors holds %lld bytes\n",
			       (long long)st.st_size);
			bad = 1;
		}
		printf("%s dup2: background_thread:false took %.1f ms\n",
		       bad ? "FAIL" : (ms > 1000 ? "FAIL (slow)" : "ok"), ms);
		return bad ? 1 : ms > 1000 ? 2 : 0;
	}
	if (!strcmp(mode, "fork")) {
		pid_t pid = fork();
		if (pid < 0)
			return 4;
		if (pid == 0) {
			close_from_3();
			/* the child has no background thread: start one, then stop it */
			bg_set(true);
			wait_for_thread(patched);
			_exit(after_close("fork child", dir));
		}
		int status = 0;
		signal(SIGALRM, on_alarm);
		alarm(30);
		waitpid(pid, &status, 0);
		alarm(0);
		int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 3;
		if (rc != 0)
			return rc;
		/* the parent's thread 0 still stops */
		return after_close("fork parent", dir);
	}
	fprintf(stderr, "%s: unknown mode %s\n", argv[0], mode);
	return 4;
}
