/* SPDX-License-Identifier: MIT */
/*
 * purge_pressure_open(): the service side of systemd's memory-pressure
 * protocol (systemd docs/PRESSURE.md), so that an event loop can call
 * purge_flush() when the kernel reports memory stalls.
 *
 *   $MEMORY_PRESSURE_WATCH  an absolute path: a PSI file (a regular file on
 *                           procfs or cgroupfs that reads as PSI: open,
 *                           write the trigger, poll POLLPRI, never read); a
 *                           FIFO (open, poll POLLIN, read and discard); an
 *                           AF_UNIX stream socket (connect, write, poll
 *                           POLLIN, read and discard); another character
 *                           device (open, poll POLLIN, read and discard);
 *                           /dev/null: do not watch.
 *   $MEMORY_PRESSURE_WRITE  optional, base64: the bytes to write right after
 *                           opening (binary, NUL bytes included).
 * Unset: /proc/pressure/memory with systemd's default trigger.
 *
 * sd-event's sd_event_add_memory_pressure() (src/libsystemd/sd-event/
 * sd-event.c) decided what the protocol leaves open: an empty WATCH also
 * means "do not watch" (-EHOSTDOWN); a directory is -EISDIR, a block
 * device or other inode -EBADF; a named path that does not exist is
 * -ENOENT, never a fallback; a regular file off procfs and cgroupfs is
 * -ENOTTY before anything is written.  Where sd-event spins, reads its own
 * bytes back or writes where it should not, this does better:
 *  - /dev/null is known by meaning and by device number (1:3), not by one
 *    spelling: "/dev//null" and a link to it turn watching off too;
 *  - the other memory devices (major 1: zero, full, random, kmsg, mem...)
 *    are always readable or worse to open: -ENOTTY;
 *  - a regular file on procfs or cgroupfs must also have a PSI file's
 *    name (/proc/pressure/memory, <cgroup>/memory.pressure, and cpu, io,
 *    irq; the name of what was opened, links resolved) and read as PSI
 *    ("some avg10=" or "full avg10="), so that no variable writes into
 *    /proc/self/comm, cgroup.kill or memory.max, and nothing else is even
 *    read (a read of /proc/kmsg takes what it returns from the log);
 *  - a PSI file named without WRITE (or with it empty) gets the default
 *    trigger: with none, the kernel answers every poll POLLPRI | POLLERR;
 *  - a FIFO is opened O_RDWR and never written: the process is then a
 *    writer itself, so it never polls POLLHUP once a notifier closes, and
 *    it does not read its own bytes back as an event (a FIFO is one
 *    buffer: whatever it writes, it reads);
 *  - a character device is opened read-only and never written.
 * The inode opened must be the one stat() saw, and the file system and
 * contents of a PSI file are checked on the opened descriptor, before the
 * write.
 *
 * No allocation: the decoded bytes go to a fixed buffer.
 */
#include "compat.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "purge.h"

#define PRESSURE_DEFAULT_PATH "/proc/pressure/memory"

/* linux/magic.h */
#define PRESSURE_PROC_MAGIC    0x9fa0
#define PRESSURE_CGROUP2_MAGIC 0x63677270

/* The memory devices' major, and /dev/null's minor (drivers/char/mem.c). */
#define PRESSURE_MEM_MAJOR  1
#define PRESSURE_NULL_MINOR 3

/* 200 ms of "some" stall in a 2 s window, sd-event's default: 2 s is the
 * window the kernel allows unprivileged triggers (multiples of 2 s, Linux
 * 6.5+, kernel/sched/psi.c).  The NUL goes along: psi_write() overwrites
 * the last byte it is given with one (kernel/sched/psi.c). */
#define PRESSURE_DEFAULT_TRIGGER "some 200000 2000000"

/* The kernel takes triggers of up to 32 bytes (psi_write()); a socket's
 * listener may want more, but not much. */
#define PRESSURE_WRITE_MAX 256

struct pressure_bytes {
	unsigned char b[PRESSURE_WRITE_MAX];
	size_t len;
};

enum { B64_BAD = -1, B64_SPACE = -2, B64_PAD = -3 };

static int pressure_b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '/')
		return c == '+' ? 62 : 63;
	if (c == '=')
		return B64_PAD;
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' ? B64_SPACE : B64_BAD;
}

/* RFC 4648 base64, padding optional, white space ignored (as systemd's
 * unbase64mem() does).  0, -EINVAL (not base64) or -E2BIG. */
static int pressure_b64_decode(const char *s, struct pressure_bytes *out)
{
	uint32_t acc = 0;
	unsigned bits = 0, n = 0, pad = 0;

	out->len = 0;
	for (; *s; s++) {
		int v = pressure_b64_value(*s);
		pad += v == B64_PAD;
		if (v == B64_SPACE || v == B64_PAD)
			continue;
		if (v == B64_BAD || pad)
			return -EINVAL;
		acc = (acc << 6 | (uint32_t)v) & 0xffffu;
		n++;
		if ((bits += 6) < 8)
			continue;
		bits -= 8;
		if (out->len == sizeof(out->b))
			return -E2BIG;
		out->b[out->len++] = (unsigned char)(acc >> bits);
	}
	return n % 4 == 1 || pad > 2 || (pad && (n + pad) % 4) ? -EINVAL : 0;
}

static int pressure_write_all(int fd, const struct pressure_bytes *w)
{
	ssize_t n;

	if (!w->len)
		return 0;
	do
		n = write(fd, w->b, w->len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* a PSI trigger is taken whole or refused; a short write to a socket
	 * this small means its buffer was full */
	return (size_t)n == w->len ? 0 : -EIO;
}

static int pressure_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strlen(path);

	if (len >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, len + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
	int err = -errno;
	close(fd);
	return err;
}

/* The next component of *p, skipping empty and "." ones: its length (0 at
 * the end), its first byte at *c. */
static size_t pressure_component(const char **p, const char **c)
{
	for (;;) {
		while (**p == '/')
			(*p)++;
		*c = *p;
		while (**p && **p != '/')
			(*p)++;
		size_t n = (size_t)(*p - *c);
		if (n != 1 || **c != '.')
			return n;
	}
}

/* The absolute path names /dev/null by meaning, however it is spelled
 * ("/dev//null", "//dev/./null/"), as systemd's path_equal() compares. */
static bool pressure_names_dev_null(const char *path)
{
	static const char *const want[] = {"dev", "null", ""};
	const char *c;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		size_t n = pressure_component(&path, &c);
		if (n != strlen(want[i]) || memcmp(c, want[i], n))
			return false;
	}
	return true;
}

enum pressure_kind { PRESSURE_PSI, PRESSURE_FIFO, PRESSURE_SOCK, PRESSURE_CHR };

/* What st can be watched as, or why it cannot: /dev/null by its number
 * (another name or a link to it) turns watching off; the other memory
 * devices are no endpoint (always readable, or worse to open). */
static int pressure_kind(const struct stat *st)
{
	if (S_ISREG(st->st_mode))
		return PRESSURE_PSI;
	if (S_ISFIFO(st->st_mode))
		return PRESSURE_FIFO;
	if (S_ISSOCK(st->st_mode))
		return PRESSURE_SOCK;
	if (S_ISDIR(st->st_mode))
		return -EISDIR;
	if (!S_ISCHR(st->st_mode))
		return -EBADF;
	if (major(st->st_rdev) != PRESSURE_MEM_MAJOR)
		return PRESSURE_CHR;
	return minor(st->st_rdev) == PRESSURE_NULL_MINOR ? -EHOSTDOWN : -ENOTTY;
}

/* fd is the inode stat() saw, not one put at the path since. */
static bool pressure_same(int fd, const struct stat *st)
{
	struct stat now;

	return fstat(fd, &now) == 0 && now.st_dev == st->st_dev && now.st_ino == st->st_ino &&
	       (now.st_mode & S_IFMT) == (st->st_mode & S_IFMT) && now.st_rdev == st->st_rdev;
}

/* "/proc/self/fd/N" into buf. */
static void pressure_fd_link(int fd, char buf[32])
{
	char digits[12];
	size_t n = 0;

	do
		digits[n++] = (char)('0' + fd % 10);
	while ((fd /= 10) > 0);
	memcpy(buf, "/proc/self/fd/", 14);
	for (size_t i = 0; i < n; i++)
		buf[14 + i] = digits[n - 1 - i];
	buf[14 + n] = '\0';
}

/* The opened descriptor's name (links resolved) is a PSI file's:
 * /proc/pressure/R on procfs, .../R.pressure on cgroupfs, R one of cpu,
 * io, memory, irq. */
static bool pressure_psi_name(int fd, bool proc)
{
	static const char *const res[] = {"cpu", "io", "memory", "irq"};
	char link[32], real[PATH_MAX];

	pressure_fd_link(fd, link);
	ssize_t n = readlink(link, real, sizeof(real) - 1);
	if (n <= 0)
		return false;
	real[n] = '\0';
	const char *base = strrchr(real, '/') + 1;
	if (proc && (size_t)(base - real) != 15)
		return false;
	if (proc && strncmp(real, "/proc/pressure/", 15))
		return false;
	for (size_t i = 0; i < sizeof(res) / sizeof(res[0]); i++) {
		size_t k = strlen(res[i]);
		if (!strncmp(base, res[i], k) && !strcmp(base + k, proc ? "" : ".pressure"))
			return true;
	}
	return false;
}

/* fd is a PSI file: on procfs or cgroupfs (as sd-event asks), and it reads
 * as PSI ("some avg10=...", or "full avg10=..." for irq.pressure), which
 * /proc/self/comm, cgroup.kill or memory.max do not.  0, -ENOTTY, or
 * -EOPNOTSUPP: PSI files read so where PSI is built in but turned off
 * (CONFIG_PSI_DEFAULT_DISABLED, kernel/sched/psi.c). */
static int pressure_is_psi(int fd)
{
	struct statfs sf;
	char head[11];
	ssize_t n;

	if (fstatfs(fd, &sf))
		return -errno;
	if (sf.f_type != PRESSURE_PROC_MAGIC && sf.f_type != PRESSURE_CGROUP2_MAGIC)
		return -ENOTTY;
	if (!pressure_psi_name(fd, sf.f_type == PRESSURE_PROC_MAGIC))
		return -ENOTTY; /* not even read: /proc/kmsg would lose what it holds */
	do
		n = pread(fd, head, sizeof(head), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EOPNOTSUPP ? -EOPNOTSUPP : -ENOTTY;
	if (n == sizeof(head) && (!memcmp(head, "some avg10=", sizeof(head)) ||
	                          !memcmp(head, "full avg10=", sizeof(head))))
		return 0;
	return -ENOTTY;
}

/* Opens what stat() saw at path: a PSI file and a FIFO read-write (a FIFO
 * so that the process holds a write end: no POLLHUP when a notifier
 * closes), a character device read-only; a PSI file is checked before
 * anything is written to it. */
static int pressure_open_inode(const char *path, const struct stat *st, int kind)
{
	int mode = kind == PRESSURE_CHR ? O_RDONLY : O_RDWR;
	int fd = open(path, mode | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return -errno;
	int ret = pressure_same(fd, st) ? 0 : -EAGAIN;
	if (!ret && kind == PRESSURE_PSI)
		ret = pressure_is_psi(fd);
	if (!ret)
		return fd;
	close(fd);
	return ret;
}

static const struct pressure_bytes pressure_default = {.b = PRESSURE_DEFAULT_TRIGGER,
                                                       .len = sizeof(PRESSURE_DEFAULT_TRIGGER)};

/* Opens path as the kind st says and writes w where bytes go: to a PSI
 * file (w, or the default trigger when w is empty) and to a socket's
 * listener; never to a FIFO (the process would read them back) or a
 * device. */
static int pressure_open_kind(const char *path, const struct stat *st,
                              const struct pressure_bytes *w)
{
	int kind = pressure_kind(st);

	if (kind < 0)
		return kind;
	int fd =
	    kind == PRESSURE_SOCK ? pressure_connect(path) : pressure_open_inode(path, st, kind);
	if (fd < 0)
		return fd;
	int ret = 0;
	if (kind == PRESSURE_PSI)
		ret = pressure_write_all(fd, w->len ? w : &pressure_default);
	else if (kind == PRESSURE_SOCK)
		ret = pressure_write_all(fd, w);
	if (!ret)
		return fd;
	close(fd);
	return ret;
}

/* What the environment names: its errors are the answer, never the default. */
static int pressure_open_env(const char *watch)
{
	const char *write64 = secure_getenv("MEMORY_PRESSURE_WRITE");
	struct pressure_bytes w = {.len = 0};
	struct stat st;

	if (!*watch || (watch[0] == '/' && pressure_names_dev_null(watch)))
		return -EHOSTDOWN;
	if (watch[0] != '/')
		return -EINVAL;
	int ret = write64 ? pressure_b64_decode(write64, &w) : 0;
	if (ret)
		return ret;
	if (stat(watch, &st))
		return -errno;
	return pressure_open_kind(watch, &st, &w);
}

static int pressure_open_default(void)
{
	struct pressure_bytes none = {.len = 0};
	struct stat st;

	/* no /proc/pressure: a kernel without PSI, or booted with psi=0 */
	if (stat(PRESSURE_DEFAULT_PATH, &st))
		return errno == ENOENT ? -EOPNOTSUPP : -errno;
	return pressure_open_kind(PRESSURE_DEFAULT_PATH, &st, &none);
}

int purge_pressure_open(void)
{
	int saved = errno;
	/* secure_getenv: a set-user-ID program opens no path its caller names */
	const char *watch = secure_getenv("MEMORY_PRESSURE_WATCH");
	int ret = watch ? pressure_open_env(watch) : pressure_open_default();

	errno = saved;
	return ret;
}
