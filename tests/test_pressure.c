/* SPDX-License-Identifier: MIT */
/*
 * purge_pressure_open(): systemd's memory-pressure protocol against fake
 * files (regular file, FIFO, AF_UNIX socket, /dev/null, bad values), the
 * default trigger on the real /proc/pressure/memory, and real pressure: a
 * child that thrashes page cache in a small memory cgroup must make the fd
 * poll ready.  Criterion runs every test in a process of its own, so the
 * environment one sets does not reach the next.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define PSI_PATH "/proc/pressure/memory"

/* No test may hang: a socket or FIFO read that waits for bytes never sent. */
TestSuite(pressure, .timeout = 30);

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static char dir[32];
static char path[64];

static void mkdir_tmp(void)
{
	snprintf(dir, sizeof(dir), "/tmp/purge-pressure-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/watch", dir);
}

static void watch(const char *w, const char *write64)
{
	cr_assert_eq(setenv("MEMORY_PRESSURE_WATCH", w, 1), 0);
	if (write64)
		cr_assert_eq(setenv("MEMORY_PRESSURE_WRITE", write64, 1), 0);
	else
		unsetenv("MEMORY_PRESSURE_WRITE");
}

/* purge_pressure_open() with errno set to a marker; *ok: the marker stayed,
 * and the fd (if any) is O_CLOEXEC.  Asserts nothing: callers that hold a
 * cgroup must clean up first. */
static int open_quiet(bool *ok)
{
	errno = 4242;
	int fd = purge_pressure_open();
	*ok = errno == 4242 && (fd < 0 || (fcntl(fd, F_GETFD) & FD_CLOEXEC));
	return fd;
}

static int open_checked(void)
{
	bool ok;
	int fd = open_quiet(&ok);

	cr_assert(ok, "errno changed, or fd %d is not O_CLOEXEC", fd);
	return fd;
}

static size_t read_file(const char *p, char *buf, size_t len)
{
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	ssize_t n = read(fd, buf, len);
	cr_assert_geq(n, 0);
	close(fd);
	return (size_t)n;
}

static bool ready(int fd, short events, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = events};

	return poll(&p, 1, timeout_ms) == 1 && (p.revents & events);
}

/* ---- the protocol's forms, against fake files ------------------------- */

/* A regular file of the test's own (never a system file: a broken decoder
 * would write to it); it must stay empty. */
static void make_empty(void)
{
	mkdir_tmp();
	int f = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	cr_assert_geq(f, 0);
	close(f);
}

static void remove_empty(void)
{
	struct stat st;

	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_size, 0, "bytes were written to %s", path);
	unlink(path);
	rmdir(dir);
}

/* A regular file is taken for a PSI file: the decoded bytes are written. */
static void regular_case(const char *write64, const char *want, size_t want_len)
{
	char buf[64];

	make_empty();
	watch(path, write64);
	int fd = open_checked();
	cr_assert_geq(fd, 0, "purge_pressure_open: %d", fd);
	cr_assert_eq(read_file(path, buf, sizeof(buf)), want_len);
	cr_assert_eq(memcmp(buf, want, want_len), 0);
	close(fd);
	unlink(path);
	rmdir(dir);
}

Test(pressure, regular_file_gets_decoded_bytes)
{
	regular_case("Zm9vYmFy", "foobar", 6); /* RFC 4648 test vector */
}

Test(pressure, regular_file_padding_space_and_nul)
{
	/* "some 1 2\0" with padding and white space, as systemd may write it */
	regular_case("c29tZSAxIDIA\n", "some 1 2", 9);
	regular_case("Zg==", "f", 1);
}

Test(pressure, regular_file_unpadded)
{
	regular_case("Zm8", "fo", 2);
}

Test(pressure, regular_file_without_write_gets_nothing)
{
	regular_case(NULL, "", 0);
}

Test(pressure, fifo_gets_bytes_and_polls_in)
{
	char buf[16];

	mkdir_tmp();
	cr_assert_eq(mkfifo(path, 0600), 0);
	int peer = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* the service manager */
	cr_assert_geq(peer, 0);
	watch(path, "cGluZw=="); /* "ping" */
	int fd = open_checked();
	cr_assert_geq(fd, 0, "purge_pressure_open: %d", fd);
	cr_assert_eq(read(peer, buf, sizeof(buf)), 4);
	cr_assert_eq(memcmp(buf, "ping", 4), 0);
	cr_assert(!ready(fd, POLLIN, 0));
	int w = open(path, O_WRONLY | O_CLOEXEC);
	cr_assert_eq(write(w, "x", 1), 1); /* an event */
	cr_assert(ready(fd, POLLIN, 1000));
	close(w);
	close(fd);
	close(peer);
	unlink(path);
	rmdir(dir);
}

Test(pressure, socket_gets_bytes_and_polls_in)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char buf[16];

	mkdir_tmp();
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int srv = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_eq(bind(srv, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(srv, 1), 0);
	watch(path, "cGluZw==");
	int fd = open_checked();
	cr_assert_geq(fd, 0, "purge_pressure_open: %d", fd);
	int c = accept(srv, NULL, NULL);
	cr_assert_geq(c, 0);
	cr_assert_eq(read(c, buf, sizeof(buf)), 4);
	cr_assert_eq(memcmp(buf, "ping", 4), 0);
	cr_assert(!ready(fd, POLLIN, 0));
	cr_assert_eq(write(c, "x", 1), 1);
	cr_assert(ready(fd, POLLIN, 1000));
	close(c);
	close(fd);
	close(srv);
	unlink(path);
	rmdir(dir);
}

Test(pressure, dev_null_or_empty_turns_it_off)
{
	watch("/dev/null", "Zm9v");
	cr_assert_eq(open_checked(), -EHOSTDOWN);
	watch("", NULL);
	cr_assert_eq(open_checked(), -EHOSTDOWN);
}

/* The environment names a trigger that cannot be had: its error, never
 * the default (which exists here when PSI does). */
Test(pressure, named_file_errors_are_returned)
{
	char sub[sizeof(path) + 8];

	make_empty();
	snprintf(sub, sizeof(sub), "%s/x", path);
	watch("/nonexistent/memory.pressure", NULL);
	cr_assert_eq(open_checked(), -ENOENT);
	watch(sub, NULL);
	cr_assert_eq(open_checked(), -ENOTDIR);
	watch(dir, NULL);
	cr_assert_eq(open_checked(), -EISDIR);
	watch("relative/memory.pressure", NULL);
	cr_assert_eq(open_checked(), -EINVAL);
	remove_empty();
}

Test(pressure, bad_base64_is_einval)
{
	static const char *bad[] = {"Zm9v!", "Z", "Zm9vY", "Zg=a", "Zg===", "Z===", "Zm9v\x01"};

	make_empty();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		/* the file exists and could be opened: the value alone is wrong */
		watch(path, bad[i]);
		cr_assert_eq(open_checked(), -EINVAL, "MEMORY_PRESSURE_WRITE=%s", bad[i]);
	}
	remove_empty();
}

Test(pressure, write_too_long_is_e2big)
{
	char big[400];

	make_empty();
	memset(big, 'A', sizeof(big) - 4); /* 396 sextets: 297 bytes */
	big[sizeof(big) - 4] = '\0';
	watch(path, big);
	cr_assert_eq(open_checked(), -E2BIG);
	remove_empty();
}

/* ---- the real kernel ---------------------------------------------------- */

static void need_psi(void)
{
	if (access(PSI_PATH, F_OK))
		cr_skip_test("no %s: kernel without PSI (CONFIG_PSI) or booted with psi=0",
		             PSI_PATH);
}

Test(pressure, default_trigger_on_proc_pressure)
{
	struct stat st;

	need_psi();
	unsetenv("MEMORY_PRESSURE_WATCH");
	unsetenv("MEMORY_PRESSURE_WRITE");
	int fd = open_checked();
	cr_assert_geq(fd, 0, "purge_pressure_open: %d (%s)", fd, strerror(-fd));
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert(S_ISREG(st.st_mode));
	/* the trigger is set: the kernel refuses a second one on the fd */
	cr_assert_eq(write(fd, "some 200000 2000000", 20), -1);
	cr_assert_eq(errno, EBUSY);
	close(fd);
}

/* A trigger the kernel refuses is reported, not replaced by the default. */
Test(pressure, kernel_refusal_is_returned)
{
	need_psi();
	watch(PSI_PATH, "Ym9ndXMgMSAyAA=="); /* "bogus 1 2\0" */
	cr_assert_eq(open_checked(), -EINVAL);
}

#include "pressure_cgroup.h"

/*
 * Real pressure.  A child joins a memory cgroup limited to 16 MiB and
 * reads a 24 MiB file through a shared mapping over and over: every pass
 * refaults pages reclaim just evicted (workingset thrashing, a memory
 * stall for PSI: mm/filemap.c).  Measured here, about a third of the time
 * stalls, well past 200 ms in 2 s.  Two fds must poll ready: the
 * cgroup's own memory.pressure, opened the way systemd names it, and the
 * default one.
 */
Test(pressure, thrashing_child_makes_fds_ready, .timeout = 25)
{
	struct pcg cg;

	need_psi();
	pcg_setup(&cg);
	/* from here on, nothing may end the test before pcg_teardown() */
	watch(cg.pressure, "c29tZSAyMDAwMDAgMjAwMDAwMAA="); /* "some 200000 2000000\0" */
	bool ok_cg, ok_sys;
	int fd_cg = open_quiet(&ok_cg);
	unsetenv("MEMORY_PRESSURE_WATCH");
	unsetenv("MEMORY_PRESSURE_WRITE");
	int fd_sys = open_quiet(&ok_sys);
	bool early = fd_cg >= 0 && cg.isolated && ready(fd_cg, POLLPRI, 500);
	uint64_t t0 = now_ms();
	pid_t child = fd_cg >= 0 && fd_sys >= 0 && !early ? pcg_thrash(&cg, 20) : -1;
	bool got_cg = child > 0 && ready(fd_cg, POLLPRI, 8000);
	uint64_t t_cg = now_ms() - t0;
	bool got_sys = child > 0 && ready(fd_sys, POLLPRI, 2000);
	int status = 0;
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
	}
	pcg_teardown(&cg);
	cr_assert_geq(fd_cg, 0, "%s: %d (%s)", cg.pressure, fd_cg, strerror(-fd_cg));
	cr_assert_geq(fd_sys, 0, "%s: %d (%s)", PSI_PATH, fd_sys, strerror(-fd_sys));
	cr_assert(ok_cg && ok_sys, "errno changed, or an fd is not O_CLOEXEC");
	cr_assert(!early, "%s polled ready before the child ran", cg.pressure);
	cr_assert(!WIFEXITED(status), "the child failed to set up (exit %d)", WEXITSTATUS(status));
	cr_assert(got_cg, "no POLLPRI on %s within 8 s of thrashing", cg.pressure);
	cr_assert(got_sys, "no POLLPRI on %s (default trigger)", PSI_PATH);
	cr_log_info("POLLPRI on %s %llu ms after the child started", cg.pressure,
	            (unsigned long long)t_cg);
}
