/* SPDX-License-Identifier: MIT */
/*
 * A small memory cgroup and a child that thrashes page cache in it, for
 * test_pressure.c.  The limit comes from the cgroup v1 memory controller
 * (/sys/fs/cgroup/memory) where it is mounted, else from cgroup v2
 * (memory.max); memory.pressure comes from a cgroup v2 directory (the
 * hybrid layout's /sys/fs/cgroup/unified, or the v2 one itself), where PSI
 * counts the stalls of that cgroup's tasks alone.  Without a v2 hierarchy
 * the system-wide /proc/pressure/memory stands in.  The tests skip when
 * the cgroups cannot be made (not root, read-only, no controller).
 */
#ifndef TESTS_PRESSURE_CGROUP_H
#define TESTS_PRESSURE_CGROUP_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#define PCG_LIMIT     "16777216" /* 16 MiB */
#define PCG_FILE_SIZE ((size_t)24 << 20)
#define PCG_TMPFS     0x01021994 /* TMPFS_MAGIC, linux/magic.h */

struct pcg {
	char mem[PATH_MAX];      /* the cgroup with the limit */
	char psi[PATH_MAX];      /* the v2 cgroup PSI reports on; "" when none or == mem */
	char pressure[PATH_MAX]; /* the memory.pressure to watch */
	char file[PATH_MAX];     /* the file the child thrashes */
	bool isolated;           /* pressure counts the child alone */
};

/* This process's cgroup path in the hierarchy whose /proc/self/cgroup line
 * starts with prefix ("memory:" for v1's controller, "" with id 0 for v2). */
static inline bool pcg_own(const char *prefix, char *out, size_t len)
{
	char line[PATH_MAX + 64];
	FILE *f = fopen("/proc/self/cgroup", "re");
	bool found = false;

	while (f && !found && fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');
		if (!c || strncmp(c + 1, prefix, strlen(prefix)) || c[1 + strlen(prefix)] != ':')
			continue;
		if (!*prefix && strncmp(line, "0:", 2))
			continue;
		snprintf(out, len, "%s", c + 2 + strlen(prefix));
		out[strcspn(out, "\n")] = '\0';
		found = true;
	}
	if (f)
		fclose(f);
	return found;
}

static inline int pcg_write(const char *dir, const char *file, const char *val)
{
	char p[PATH_MAX + 32];

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, val, strlen(val));
	int err = n < 0 ? -errno : 0;
	close(fd);
	return err;
}

static inline bool pcg_mkdir(char *out, const char *root, const char *own)
{
	int n = snprintf(out, PATH_MAX, "%s%s/purge-pressure-%d", root, strcmp(own, "/") ? own : "",
	                 (int)getpid());
	if (n < 0 || n >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return false;
	}
	return mkdir(out, 0755) == 0;
}

static inline void pcg_mkdir_or_skip(char *out, const char *root, const char *own)
{
	if (!pcg_mkdir(out, root, own))
		cr_skip_test("cannot create the cgroup %s: %s (needs root and a writable cgroup "
		             "hierarchy)",
		             out, strerror(errno));
}

/* The cgroup v2 mount: the hybrid layout's unified directory, or the root. */
static inline const char *pcg_v2_root(void)
{
	if (access("/sys/fs/cgroup/unified/cgroup.procs", F_OK) == 0)
		return "/sys/fs/cgroup/unified";
	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0)
		return "/sys/fs/cgroup";
	return NULL;
}

static inline void pcg_limit_v1(struct pcg *cg, const char *own)
{
	pcg_mkdir_or_skip(cg->mem, "/sys/fs/cgroup/memory", own);
	int err = pcg_write(cg->mem, "memory.limit_in_bytes", PCG_LIMIT);
	if (err) {
		rmdir(cg->mem);
		cr_skip_test("cgroup v1 memory.limit_in_bytes: %s", strerror(-err));
	}
}

/* Pure v2: a cgroup under the root, which may enable controllers while it
 * holds processes (the no-internal-process rule exempts it). */
static inline void pcg_limit_v2(struct pcg *cg, const char *root)
{
	if (pcg_write(root, "cgroup.subtree_control", "+memory"))
		cr_skip_test("cgroup v2 at %s: cannot enable the memory controller", root);
	pcg_mkdir_or_skip(cg->mem, root, "");
	int err = pcg_write(cg->mem, "memory.max", PCG_LIMIT);
	if (err) {
		rmdir(cg->mem);
		cr_skip_test("cgroup v2 memory.max: %s", strerror(-err));
	}
}

/* A directory on a disk, where page cache can be reclaimed and refaulted
 * (tmpfs pages cannot go anywhere without swap). */
static inline void pcg_pick_file(struct pcg *cg)
{
	static const char *dirs[] = {"/var/tmp", "."};
	struct statfs sf;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (statfs(dirs[i], &sf) == 0 && sf.f_type != PCG_TMPFS &&
		    access(dirs[i], W_OK) == 0) {
			snprintf(cg->file, sizeof(cg->file), "%s/purge-pressure-%d.bin", dirs[i],
			         (int)getpid());
			return;
		}
	cr_skip_test("no disk-backed directory (/var/tmp, .) to thrash page cache in");
}

static inline void pcg_setup(struct pcg *cg)
{
	char own[PATH_MAX], own2[PATH_MAX] = "/";
	const char *v2 = pcg_v2_root();
	bool pure_v2 = v2 && strcmp(v2, "/sys/fs/cgroup") == 0;

	memset(cg, 0, sizeof(*cg));
	pcg_pick_file(cg);
	if (v2)
		pcg_own("", own2, sizeof(own2));
	if (access("/sys/fs/cgroup/memory/cgroup.procs", F_OK) == 0 &&
	    pcg_own("memory", own, sizeof(own)))
		pcg_limit_v1(cg, own);
	else if (pure_v2)
		pcg_limit_v2(cg, v2);
	else
		cr_skip_test("no cgroup memory controller (v1 or v2) to limit a child with");
	/* hybrid: a v2 cgroup of its own for PSI; without one, the system's */
	if (v2 && !pure_v2 && !pcg_mkdir(cg->psi, v2, own2))
		cg->psi[0] = '\0';
	const char *pd = cg->psi[0] ? cg->psi : pure_v2 ? cg->mem : NULL;
	cg->isolated = pd != NULL;
	int n = snprintf(cg->pressure, sizeof(cg->pressure), "%s/memory.pressure",
	                 pd ? pd : "/proc/pressure");
	cr_assert_lt(n, (int)sizeof(cg->pressure));
}

static inline void pcg_teardown(struct pcg *cg)
{
	unlink(cg->file);
	/* the killed child may be leaving still: rmdir answers EBUSY meanwhile */
	for (int i = 0; i < 100 && rmdir(cg->mem) && errno == EBUSY; i++)
		usleep(10000);
	if (cg->psi[0])
		for (int i = 0; i < 100 && rmdir(cg->psi) && errno == EBUSY; i++)
			usleep(10000);
}

/* The child: joins the cgroups, writes the file (its pages charged to the
 * cgroup), then reads it through a shared mapping until `secs` pass. */
static inline void pcg_child(const struct pcg *cg, unsigned secs)
{
	static char buf[1 << 16];
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (pcg_write(cg->mem, "cgroup.procs", pid) ||
	    (cg->psi[0] && pcg_write(cg->psi, "cgroup.procs", pid)))
		_exit(3);
	int fd = open(cg->file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	memset(buf, 1, sizeof(buf));
	for (size_t off = 0; fd >= 0 && off < PCG_FILE_SIZE; off += sizeof(buf))
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			_exit(4);
	const volatile char *m = mmap(NULL, PCG_FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (fd < 0 || m == MAP_FAILED)
		_exit(5);
	for (time_t end = time(NULL) + (time_t)secs; time(NULL) < end;)
		for (size_t off = 0; off < PCG_FILE_SIZE; off += 4096)
			(void)m[off];
	_exit(0);
}

static inline pid_t pcg_thrash(const struct pcg *cg, unsigned secs)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		pcg_child(cg, secs);
	return pid;
}

#endif /* TESTS_PRESSURE_CGROUP_H */
