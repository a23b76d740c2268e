/* SPDX-License-Identifier: MIT */
/*
 * purge_pressure_open(): systemd's memory-pressure protocol against each
 * kind of endpoint (a PSI file, a FIFO, an AF_UNIX socket, a character
 * device), what it refuses (/dev/null however it is spelled, the memory
 * devices, regular files that are not PSI files, bad values), the default
 * trigger on the real /proc/pressure/memory, and real pressure: a child
 * that thrashes page cache in a small memory cgroup must make the fd poll
 * ready.  The event loop of purge_pressure_open(3) is pressure_turn()
 * below, and runs against every kind.  Criterion runs every test in a
 * process of its own, so the environment one sets does not reach the
 * next.
 */
#define _GNU_SOURCE /* posix_openpt, ptsname, mknod, prctl */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define PSI_PATH "/proc/pressure/memory"
#define TRIGGER  "c29tZSAyMDAwMDAgMjAwMDAwMAA=" /* "some 200000 2000000\0" */

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

static void rm_tmp(void)
{
	unlink(path);
	rmdir(dir);
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
 * and the fd (if any) is O_CLOEXEC and O_NONBLOCK.  Asserts nothing:
 * callers that hold a cgroup must clean up first. */
static int open_quiet(bool *ok)
{
	errno = 4242;
	int fd = purge_pressure_open();
	*ok = errno == 4242 &&
	      (fd < 0 || ((fcntl(fd, F_GETFD) & FD_CLOEXEC) && (fcntl(fd, F_GETFL) & O_NONBLOCK)));
	return fd;
}

static int open_checked(void)
{
	bool ok;
	int fd = open_quiet(&ok);

	cr_assert(ok, "errno changed, or fd %d is not O_CLOEXEC and O_NONBLOCK", fd);
	return fd;
}

static int open_fd(void)
{
	int fd = open_checked();

	cr_assert_geq(fd, 0, "purge_pressure_open: %d (%s)", fd, strerror(-fd));
	return fd;
}

static short revents(int fd, short events, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = events};

	return poll(&p, 1, timeout_ms) == 1 ? p.revents : 0;
}

static bool ready(int fd, short events, int timeout_ms)
{
	return revents(fd, events, timeout_ms) & events;
}

/* ---- the loop of purge_pressure_open(3) --------------------------------- */

#define TURN_EVENT 1 /* memory pressure: flush */
#define TURN_GONE  2 /* the endpoint is gone: close it, stop watching */

/* What the page's loop does with one poll's revents, word for word: one
 * bounded read on POLLIN, never a loop. */
static int pressure_turn(int fd, short rev)
{
	char junk[64];
	int r = rev & (POLLERR | POLLHUP | POLLNVAL) ? TURN_GONE : 0;

	if ((rev & POLLPRI) && !r)
		r |= TURN_EVENT;
	if (rev & POLLIN) {
		ssize_t n = read(fd, junk, sizeof(junk));
		r |= n > 0 ? TURN_EVENT : n == 0 ? TURN_GONE : 0;
	}
	return r;
}

static short events_for(int fd)
{
	struct stat st;

	cr_assert_eq(fstat(fd, &st), 0);
	return S_ISREG(st.st_mode) ? POLLPRI : POLLIN;
}

/* The loop for `polls` polls of `timeout_ms`: the turns that woke up, and
 * in *what the TURN_ bits they said. */
static int loop_wakes(int fd, int polls, int timeout_ms, int *what)
{
	short ev = events_for(fd);
	int wakes = 0;

	*what = 0;
	for (int i = 0; i < polls && !(*what & TURN_GONE); i++) {
		short rev = revents(fd, ev, timeout_ms);
		if (rev) {
			wakes++;
			*what |= pressure_turn(fd, rev);
		}
	}
	return wakes;
}

/* ---- sockets: the decoded bytes, and the loop ---------------------------- */

static int listen_at(const char *p)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", p);
	int srv = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_eq(bind(srv, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(srv, 1), 0);
	return srv;
}

/* The service manager's side: what it reads from the connection until the
 * process closes its fd. */
static size_t socket_case(const char *write64, char *got, size_t len)
{
	size_t n = 0;
	ssize_t k;

	mkdir_tmp();
	int srv = listen_at(path);
	watch(path, write64);
	int fd = open_fd();
	int c = accept(srv, NULL, NULL);
	cr_assert_geq(c, 0);
	close(fd);
	while (n < len && (k = read(c, got + n, len - n)) > 0)
		n += (size_t)k;
	close(c);
	close(srv);
	rm_tmp();
	return n;
}

static void socket_gets(const char *write64, const char *want, size_t want_len)
{
	char got[64];

	cr_assert_eq(socket_case(write64, got, sizeof(got)), want_len, "%s", write64);
	cr_assert_eq(memcmp(got, want, want_len), 0, "%s", write64);
}

Test(pressure, socket_gets_decoded_bytes)
{
	socket_gets("Zm9vYmFy", "foobar", 6); /* RFC 4648 test vector */
	/* "some 1 2\0" with padding and white space, as systemd may write it */
	socket_gets("c29tZSAxIDIA\n", "some 1 2", 9);
	socket_gets("Zg==", "f", 1);
	socket_gets("Zm8", "fo", 2); /* unpadded */
}

Test(pressure, socket_without_write_gets_nothing)
{
	char got[8];

	cr_assert_eq(socket_case(NULL, got, sizeof(got)), 0);
	cr_assert_eq(socket_case("", got, sizeof(got)), 0);
}

/* A peer's bytes are an event; its close is the end (POLLIN with a read of
 * 0, POLLHUP), once, not an event. */
Test(pressure, socket_event_then_peer_close_is_gone)
{
	int what;

	mkdir_tmp();
	int srv = listen_at(path);
	watch(path, NULL);
	int fd = open_fd();
	int c = accept(srv, NULL, NULL);
	cr_assert_geq(c, 0);
	cr_assert_eq(loop_wakes(fd, 3, 0, &what), 0);
	cr_assert_eq(write(c, "x", 1), 1);
	cr_assert_eq(loop_wakes(fd, 1, 1000, &what), 1);
	cr_assert_eq(what, TURN_EVENT);
	cr_assert_eq(loop_wakes(fd, 3, 0, &what), 0, "one byte, one event");
	close(c);
	cr_assert_eq(loop_wakes(fd, 10, 1000, &what), 1);
	cr_assert_eq(what, TURN_GONE);
	close(fd);
	close(srv);
	rm_tmp();
}

/* ---- FIFOs -------------------------------------------------------------- */

static void notify(const char *p)
{
	int w = open(p, O_WRONLY | O_NONBLOCK | O_CLOEXEC);

	cr_assert_geq(w, 0);
	cr_assert_eq(write(w, "x", 1), 1);
	close(w);
}

/* The notifier writes and closes: one event, then quiet, and the next
 * notifier is seen too.  Opened read-only, the fd polled POLLHUP for ever
 * once the first writer closed: the page's loop woke 1,507,436 times in
 * 2 s, and a loop that drops the fd on POLLHUP stopped watching. */
Test(pressure, fifo_event_then_quiet_then_event)
{
	int what;

	mkdir_tmp();
	cr_assert_eq(mkfifo(path, 0600), 0);
	watch(path, NULL);
	int fd = open_fd();
	cr_assert_eq(loop_wakes(fd, 3, 0, &what), 0);
	notify(path);
	cr_assert_eq(loop_wakes(fd, 1, 1000, &what), 1);
	cr_assert_eq(what, TURN_EVENT);
	cr_assert_eq(revents(fd, POLLIN, 0), 0, "the FIFO stays ready after its writer closed");
	int wakes = loop_wakes(fd, 20, 5, &what);
	cr_assert_eq(wakes, 0, "%d wakes in 20 polls after one event (what %d)", wakes, what);
	notify(path);
	cr_assert_eq(loop_wakes(fd, 1, 1000, &what), 1);
	cr_assert_eq(what, TURN_EVENT, "the second notifier was not seen as an event");
	close(fd);
	rm_tmp();
}

/* With MEMORY_PRESSURE_WRITE set, nothing goes into the FIFO: a FIFO has
 * one buffer, and the process would read its own bytes back as an event
 * (and a full flush at start-up). */
Test(pressure, fifo_gets_no_bytes)
{
	char buf[16];
	int what;

	mkdir_tmp();
	cr_assert_eq(mkfifo(path, 0600), 0);
	int peer = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	cr_assert_geq(peer, 0);
	watch(path, "cGluZw=="); /* "ping" */
	int fd = open_fd();
	cr_assert_eq(loop_wakes(fd, 3, 0, &what), 0, "the fd reads its own bytes back");
	cr_assert_eq(read(peer, buf, sizeof(buf)), -1, "bytes were written to the FIFO");
	cr_assert_eq(errno, EAGAIN);
	close(fd);
	close(peer);
	rm_tmp();
}

/* ---- character devices -------------------------------------------------- */

static const char *const dev_null_spellings[] = {
    "",           "/dev/null",     "/dev//null",  "//dev/null", "/dev/./null", "/./dev/null",
    "/dev/null/", "///dev///null", "/dev/null/.",
};

/* The device, not its spelling: every path to 1:3 turns watching off, as
 * the literal "/dev/null" does; sd-event compares paths by meaning too. */
Test(pressure, dev_null_however_spelled_turns_it_off)
{
	for (size_t i = 0; i < sizeof(dev_null_spellings) / sizeof(dev_null_spellings[0]); i++) {
		watch(dev_null_spellings[i], "Zm9v");
		cr_assert_eq(open_checked(), -EHOSTDOWN, "\"%s\"", dev_null_spellings[i]);
	}
	mkdir_tmp();
	cr_assert_eq(symlink("/dev/null", path), 0);
	watch(path, NULL);
	cr_assert_eq(open_checked(), -EHOSTDOWN, "a symbolic link to /dev/null");
	unlink(path);
	watch("/dev/../dev/null", NULL);
	cr_assert_eq(open_checked(), -EHOSTDOWN, "/dev/../dev/null");
	if (mknod(path, S_IFCHR | 0600, makedev(1, 3)) == 0) {
		watch(path, NULL);
		cr_assert_eq(open_checked(), -EHOSTDOWN, "a device node 1:3 of another name");
	} else {
		cr_log_info("mknod 1:3: %s: the node of another name is not tried",
		            strerror(errno));
	}
	rm_tmp();
}

/* The memory devices (major 1) are always readable, or worse to open:
 * none is a pressure endpoint.  /dev/zero made a read-and-discard loop
 * endless, and POLLIN on any of them a busy loop. */
Test(pressure, memory_devices_are_refused)
{
	static const char *const devs[] = {"/dev/zero",   "/dev/full", "/dev/urandom",
	                                   "/dev/random", "/dev/kmsg", "/dev/port"};
	struct stat st;

	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
		if (stat(devs[i], &st) || !S_ISCHR(st.st_mode) || major(st.st_rdev) != 1)
			continue;
		watch(devs[i], NULL);
		cr_assert_eq(open_checked(), -ENOTTY, "%s", devs[i]);
	}
}

/* Another character device is watched for POLLIN, and gets no bytes: an
 * environment variable does not write to devices.  A pseudo-terminal
 * stands in for one, its master for the peer. */
Test(pressure, char_device_polls_in_and_gets_no_bytes)
{
	char buf[16];
	int what;
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (m < 0)
		cr_skip_test("posix_openpt: %s", strerror(errno));
	cr_assert_eq(grantpt(m), 0);
	cr_assert_eq(unlockpt(m), 0);
	watch(ptsname(m), "cGluZw=="); /* "ping" */
	int fd = open_fd();
	struct termios t;
	cr_assert_eq(tcgetattr(fd, &t), 0);
	cfmakeraw(&t); /* a byte is readable as it comes, and no echo */
	cr_assert_eq(tcsetattr(fd, TCSANOW, &t), 0);
	cr_assert_eq(fcntl(m, F_SETFL, O_NONBLOCK), 0);
	cr_assert_eq(read(m, buf, sizeof(buf)), -1, "bytes were written to the device");
	cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(loop_wakes(fd, 3, 0, &what), 0);
	cr_assert_eq(write(m, "x", 1), 1);
	cr_assert_eq(loop_wakes(fd, 1, 1000, &what), 1);
	cr_assert_eq(what, TURN_EVENT);
	cr_assert_eq(loop_wakes(fd, 3, 0, &what), 0);
	close(fd);
	close(m);
}

/* ---- regular files that are not PSI files -------------------------------- */

static const char precious[] = "precious data\n";

static const char psi_lookalike[] = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";

/* Not on procfs or cgroupfs: refused before anything is written (it was
 * opened O_RDWR and WRITE's bytes went at offset 0), even when it reads
 * as PSI does. */
static void refused_untouched(const char *data, size_t len, const char *name)
{
	static const char *const writes[] = {"Zm9vYmFy", NULL, ""};
	char buf[64];

	mkdir_tmp();
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int f = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	cr_assert_eq(write(f, data, len), (ssize_t)len);
	close(f);
	for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
		watch(path, writes[i]);
		cr_assert_eq(open_checked(), -ENOTTY, "MEMORY_PRESSURE_WRITE=%s",
		             writes[i] ? writes[i] : "(unset)");
		f = open(path, O_RDONLY | O_CLOEXEC);
		cr_assert_eq(read(f, buf, sizeof(buf)), (ssize_t)len);
		close(f);
		cr_assert_eq(memcmp(buf, data, len), 0, "%s was written", path);
	}
	rm_tmp();
}

Test(pressure, regular_file_elsewhere_is_refused_untouched)
{
	refused_untouched(precious, sizeof(precious) - 1, "watch");
	refused_untouched(psi_lookalike, sizeof(psi_lookalike) - 1, "watch");
	/* named as a cgroup's PSI file and reading as one: only the file
	 * system tells it from one */
	refused_untouched(psi_lookalike, sizeof(psi_lookalike) - 1, "memory.pressure");
}

/* On procfs, but not a PSI file: /proc/self/comm takes what is written to
 * it as the thread's name.  sd-event would write there (it checks the
 * file system only). */
Test(pressure, proc_file_that_is_not_psi_is_refused)
{
	char before[17], after[17];

	cr_assert_eq(prctl(PR_GET_NAME, before), 0);
	watch("/proc/thread-self/comm", "Zm9vYmFy"); /* "foobar" */
	cr_assert_eq(open_checked(), -ENOTTY);
	watch("/proc/self/comm", "Zm9vYmFy");
	cr_assert_eq(open_checked(), -ENOTTY);
	cr_assert_eq(prctl(PR_GET_NAME, after), 0);
	cr_assert_str_eq(after, before, "the thread was renamed");
}

/* A procfs file that reads as PSI does but is not one: a thread named
 * "some avg10=" reads so through its comm file.  Only the file's name
 * tells it from a PSI file (and no PSI file is read before its name is
 * checked: /proc/kmsg would lose what a read takes). */
Test(pressure, proc_file_reading_as_psi_is_refused_by_its_name)
{
	char before[17], after[17];

	cr_assert_eq(prctl(PR_GET_NAME, before), 0);
	cr_assert_eq(prctl(PR_SET_NAME, "some avg10=0.0"), 0);
	watch("/proc/thread-self/comm", "Zm9vYmFy"); /* "foobar" */
	int ret = open_checked();
	cr_assert_eq(prctl(PR_GET_NAME, after), 0);
	cr_assert_eq(prctl(PR_SET_NAME, before), 0);
	cr_assert_eq(ret, -ENOTTY);
	cr_assert_str_eq(after, "some avg10=0.0", "the thread was renamed \"%s\"", after);
}

#include "pressure_cgroup.h"

/* A cgroup v2 directory of the test's own, or a skip. */
static void v2_cgroup(char *out)
{
	const char *v2 = pcg_v2_root();
	char own[PATH_MAX] = "/";

	if (!v2)
		cr_skip_test("no cgroup v2 hierarchy (/sys/fs/cgroup/unified or /sys/fs/cgroup)");
	pcg_own("", own, sizeof(own));
	pcg_mkdir_or_skip(out, v2, own);
}

/* On cgroupfs, but not a PSI file: cgroup.pressure turns PSI off for the
 * cgroup when it is written "0" (cgroup.kill, memory.max and cgroup.procs
 * take their bytes as readily). */
Test(pressure, cgroup_file_that_is_not_psi_is_refused)
{
	char cg[PATH_MAX], file[PATH_MAX + 32], buf[8] = "";

	v2_cgroup(cg);
	snprintf(file, sizeof(file), "%s/cgroup.pressure", cg);
	watch(file, "MA=="); /* "0" */
	int ret = access(file, F_OK) == 0 ? open_checked() : -ENOENT;
	int f = open(file, O_RDONLY | O_CLOEXEC);
	ssize_t n = f >= 0 ? read(f, buf, sizeof(buf) - 1) : -1;
	if (f >= 0)
		close(f);
	rmdir(cg);
	if (ret == -ENOENT)
		cr_skip_test("%s: no such file (Linux 6.1 and later)", file);
	cr_assert_eq(ret, -ENOTTY);
	cr_assert(n > 0 && buf[0] == '1', "%s reads \"%s\": it was written", file, buf);
}

/* ---- errors ------------------------------------------------------------- */

/* A regular file of the test's own: a broken decoder must not write to it. */
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
	rm_tmp();
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
	watch("dev/null", NULL);
	cr_assert_eq(open_checked(), -EINVAL);
	remove_empty();
}

Test(pressure, bad_base64_is_einval)
{
	static const char *bad[] = {"Zm9v!", "Z", "Zm9vY", "Zg=a", "Zg===", "Z===", "Zm9v\x01"};

	make_empty();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		/* the value alone is wrong: refused before the file is looked at */
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

/* ---- PSI files, the real kernel ----------------------------------------- */

static void need_psi(void)
{
	if (access(PSI_PATH, F_OK))
		cr_skip_test("no %s: kernel without PSI (CONFIG_PSI) or booted with psi=0",
		             PSI_PATH);
}

/* The fd has a trigger: the kernel refuses a second one on it, and the fd
 * does not poll ready (without one: POLLPRI | POLLERR at once, always). */
static void assert_armed(int fd)
{
	short rev = revents(fd, POLLPRI, 0);

	cr_assert_eq(rev & POLLERR, 0, "POLLERR: the fd has no trigger");
	cr_assert_eq(write(fd, "some 200000 2000000", 20), -1, "the fd had no trigger");
	cr_assert_eq(errno, EBUSY);
}

Test(pressure, default_trigger_on_proc_pressure)
{
	struct stat st;

	need_psi();
	unsetenv("MEMORY_PRESSURE_WATCH");
	unsetenv("MEMORY_PRESSURE_WRITE");
	int fd = open_fd();
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert(S_ISREG(st.st_mode));
	assert_armed(fd);
	close(fd);
}

Test(pressure, psi_file_gets_the_trigger_written)
{
	need_psi();
	watch(PSI_PATH, TRIGGER);
	int fd = open_fd();
	assert_armed(fd);
	close(fd);
}

/* Without MEMORY_PRESSURE_WRITE (or with it empty) a PSI file gets the
 * default trigger: with none, every poll answered POLLPRI | POLLERR at
 * once, and a loop that took POLLPRI for an event flushed in a busy loop.
 * The file is the whole machine's: another process's stalls may fire the
 * trigger meanwhile (an event), so the loop must only never see the end. */
Test(pressure, psi_file_without_write_gets_the_default_trigger)
{
	static const char *const writes[] = {NULL, ""};
	int what;

	need_psi();
	for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
		watch(PSI_PATH, writes[i]);
		int fd = open_fd();
		int wakes = loop_wakes(fd, 5, 0, &what);
		cr_assert_eq(what & TURN_GONE, 0, "the loop woke %d times at once, POLLERR", wakes);
		cr_assert_leq(wakes, 1, "the loop woke %d times at once", wakes);
		assert_armed(fd);
		close(fd);
	}
}

/* A PSI file is known by what is opened, not by how it is spelled. */
Test(pressure, psi_file_spelled_oddly)
{
	need_psi();
	watch("/proc//pressure/./memory", NULL);
	int fd = open_fd();
	assert_armed(fd);
	close(fd);
}

/* A trigger the kernel refuses is reported, not replaced by the default. */
Test(pressure, kernel_refusal_is_returned)
{
	need_psi();
	watch(PSI_PATH, "Ym9ndXMgMSAyAA=="); /* "bogus 1 2\0" */
	cr_assert_eq(open_checked(), -EINVAL);
	watch(PSI_PATH, "c29tZSAzMDAwMDAwIDIwMDAwMDAA"); /* "some 3000000 2000000\0" */
	cr_assert_eq(open_checked(), -EINVAL, "a threshold longer than its window");
}

/* The cgroup of a memory.pressure is removed: POLLPRI | POLLERR for ever
 * (kernfs, for a file whose node is gone), which the loop takes for the
 * end, not for an event. */
Test(pressure, psi_file_of_removed_cgroup_is_gone)
{
	char cg[PATH_MAX], file[PATH_MAX + 32];
	int what;

	need_psi();
	v2_cgroup(cg);
	snprintf(file, sizeof(file), "%s/memory.pressure", cg);
	watch(file, NULL);
	bool ok;
	int fd = open_quiet(&ok);
	int wakes_before = fd >= 0 ? loop_wakes(fd, 3, 0, &what) : -1;
	int rm = rmdir(cg);
	cr_assert_geq(fd, 0, "%s: %d (%s)", file, fd, strerror(-fd));
	cr_assert(ok);
	cr_assert_eq(rm, 0, "rmdir %s: %s", cg, strerror(errno));
	cr_assert_eq(wakes_before, 0);
	cr_assert_eq(revents(fd, POLLPRI, 0), POLLPRI | POLLERR);
	cr_assert_eq(loop_wakes(fd, 10, 0, &what), 1);
	cr_assert_eq(what, TURN_GONE);
	close(fd);
}

/*
 * Real pressure.  A child joins a memory cgroup limited to 16 MiB and
 * reads a 24 MiB file through a shared mapping over and over: every pass
 * refaults pages reclaim just evicted (workingset thrashing, a memory
 * stall for PSI: mm/filemap.c).  Measured here, about a third of the time
 * stalls, well past 200 ms in 2 s.  Two fds must poll ready: the
 * cgroup's own memory.pressure, opened the way systemd names it, and the
 * default one; the loop takes each for an event.
 */
Test(pressure, thrashing_child_makes_fds_ready, .timeout = 25)
{
	struct pcg cg;

	need_psi();
	pcg_setup(&cg);
	/* from here on, nothing may end the test before pcg_teardown() */
	watch(cg.pressure, TRIGGER);
	bool ok_cg, ok_sys;
	int fd_cg = open_quiet(&ok_cg);
	unsetenv("MEMORY_PRESSURE_WATCH");
	unsetenv("MEMORY_PRESSURE_WRITE");
	int fd_sys = open_quiet(&ok_sys);
	bool early = fd_cg >= 0 && cg.isolated && ready(fd_cg, POLLPRI, 500);
	uint64_t t0 = now_ms();
	pid_t child = fd_cg >= 0 && fd_sys >= 0 && !early ? pcg_thrash(&cg, 20) : -1;
	short rev_cg = child > 0 ? revents(fd_cg, POLLPRI, 8000) : 0;
	uint64_t t_cg = now_ms() - t0;
	short rev_sys = child > 0 ? revents(fd_sys, POLLPRI, 2000) : 0;
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
	cr_assert_eq(pressure_turn(fd_cg, rev_cg), TURN_EVENT,
	             "no pressure event on %s within 8 s of thrashing (revents %#x)", cg.pressure,
	             rev_cg);
	cr_assert_eq(pressure_turn(fd_sys, rev_sys), TURN_EVENT,
	             "no pressure event on %s (default trigger, revents %#x)", PSI_PATH, rev_sys);
	cr_log_info("POLLPRI on %s %llu ms after the child started", cg.pressure,
	            (unsigned long long)t_cg);
}
