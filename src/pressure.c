/* SPDX-License-Identifier: MIT */
/*
 * purge_pressure_open(): the service side of systemd's memory-pressure
 * protocol (systemd docs/MEMORY_PRESSURE.md), so that an event loop can
 * call purge_flush() when the kernel reports memory stalls.
 *
 *   $MEMORY_PRESSURE_WATCH  an absolute path: a regular file is a PSI file
 *                           (open, write, poll POLLPRI, never read); a FIFO
 *                           (open, write, poll POLLIN, read and discard); an
 *                           AF_UNIX stream socket (connect, write, poll
 *                           POLLIN, read and discard); "/dev/null": do not
 *                           watch.
 *   $MEMORY_PRESSURE_WRITE  optional, base64: the bytes to write right after
 *                           opening (binary, NUL bytes included).
 * Unset: /proc/pressure/memory with systemd's default trigger.
 *
 * Where the protocol leaves a choice, sd-event's sd_event_add_memory_pressure()
 * (src/libsystemd/sd-event/sd-event.c) decided it: an empty WATCH also means
 * "do not watch", and that answer is -EHOSTDOWN; a character device is
 * watched like a FIFO; a directory is -EISDIR, any other type -EBADF; a
 * named path that does not exist is -ENOENT, never a fallback.  Unlike
 * sd-event, a regular file is not required to live on procfs or cgroupfs:
 * the protocol does not ask for it, and tests use plain files.
 *
 * No allocation: the decoded bytes go to a fixed buffer.
 */
#include "compat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "purge.h"

#define PRESSURE_DEFAULT_PATH "/proc/pressure/memory"

/* 200 ms of "some" stall in a 2 s window, sd-event's default: 2 s is the
 * window the kernel allows unprivileged triggers (multiples of 2 s, Linux
 * 6.5+, kernel/sched/psi.c).  The NUL goes along: psi_write() overwrites
 * the last byte it is given with one (kernel/sched/psi.c). */
static const char pressure_default_trigger[] = "some 200000 2000000";

/* The kernel takes triggers of up to 32 bytes (psi_write()); a socket or
 * FIFO peer may want more, but not much. */
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
	/* a PSI trigger is taken whole or refused; a short write to a FIFO or
	 * socket this small means its buffer was full */
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

/* Opens path as the kind of inode mode says, then writes w. */
static int pressure_open_kind(const char *path, mode_t mode, const struct pressure_bytes *w)
{
	int fd;

	if (S_ISSOCK(mode))
		fd = pressure_connect(path);
	else if (S_ISREG(mode) || S_ISFIFO(mode) || S_ISCHR(mode))
		fd = open(path, (w->len ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	else
		return S_ISDIR(mode) ? -EISDIR : -EBADF;
	if (fd < 0)
		return S_ISSOCK(mode) ? fd : -errno;
	int ret = pressure_write_all(fd, w);
	if (ret == 0)
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

	if (!*watch || !strcmp(watch, "/dev/null"))
		return -EHOSTDOWN;
	if (watch[0] != '/')
		return -EINVAL;
	int ret = write64 ? pressure_b64_decode(write64, &w) : 0;
	if (ret)
		return ret;
	if (stat(watch, &st))
		return -errno;
	return pressure_open_kind(watch, st.st_mode, &w);
}

static int pressure_open_default(void)
{
	struct pressure_bytes w = {.len = sizeof(pressure_default_trigger)};

	memcpy(w.b, pressure_default_trigger, sizeof(pressure_default_trigger));
	int fd = pressure_open_kind(PRESSURE_DEFAULT_PATH, S_IFREG, &w);
	/* no /proc/pressure: a kernel without PSI, or booted with psi=0 */
	return fd == -ENOENT ? -EOPNOTSUPP : fd;
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
