// SPDX-License-Identifier: MIT
/* purge-bench memory readers: /proc/vmstat, the memory cgroup, statm and
 * smaps_rollup, each from a path the caller names. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* A decimal number at s, after blanks: 0 or -EINVAL. */
static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	while (*s == ' ' || *s == '\t')
		s++;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	*out = v;
	return 0;
}

int bench_read_key(const char *path, const char *key, uint64_t *out)
{
	char line[512];
	size_t n = strlen(key);
	int ret = -ENOENT;
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	/* the key must end where the number's blanks start: thp_split_pmd is
	 * not thp_split_pmd_x, nor is thp_split a key */
	while (ret == -ENOENT && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && (line[n] == ' ' || line[n] == '\t'))
			ret = parse_u64(line + n, out);
	fclose(f);
	return ret;
}

/* The first line of path. */
static int read_first_line(const char *path, char *line, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	bool ok = fgets(line, (int)len, f) != NULL;
	fclose(f);
	return ok ? 0 : -EINVAL;
}

int bench_read_number(const char *path, uint64_t *out)
{
	char line[128];
	int ret = read_first_line(path, line, sizeof(line));
	return ret ? ret : parse_u64(line, out);
}

int bench_read_statm(const char *path, size_t page, uint64_t *out)
{
	char line[256], *end;
	uint64_t pages;
	int ret = read_first_line(path, line, sizeof(line));
	if (ret)
		return ret;
	strtoull(line, &end, 10); /* the first field is the mapped size */
	if (end == line || parse_u64(end, &pages))
		return -EINVAL;
	*out = pages * page;
	return 0;
}

/* The search for the usage file: what it found, and its first failure. */
struct finder {
	struct bench_memsrc *s;
	const char *root;
	char tried[200]; /* the first file that did not read, and why */
};

/* Use file for the usage if it reads; else remember why, once (the first
 * failure is the telling one: v1's file on a v1 system). */
static bool try_usage(struct finder *fd, int kind, const char *file)
{
	uint64_t v;
	int ret = bench_read_number(file, &v);
	if (!ret) {
		fd->s->kind = kind;
		snprintf(fd->s->path, sizeof(fd->s->path), "%s", file);
	} else if (!fd->tried[0]) {
		snprintf(fd->tried, sizeof(fd->tried), "%s: %s", file, strerror(-ret));
	}
	return !ret;
}

static bool has_memory(char *controllers)
{
	for (char *c = strtok(controllers, ","); c; c = strtok(NULL, ","))
		if (!strcmp(c, "memory"))
			return true;
	return false;
}

/* Lines of /proc/PID/cgroup are "ID:CONTROLLERS:PATH"; v1 lists "memory"
 * among the controllers, v2 has ID 0 and none (cgroups(7)). */
static bool try_cgroup_line(struct finder *fd, char *line)
{
	char file[600], *ctl = strchr(line, ':'), *path = ctl ? strchr(ctl + 1, ':') : NULL;
	if (!path)
		return false;
	*ctl++ = *path++ = 0;
	path[strcspn(path, "\n")] = 0;
	const char *rel = strcmp(path, "/") ? path : ""; /* no "//" for the root */
	bool v2 = !strcmp(line, "0") && !*ctl;
	if (!v2 && has_memory(ctl)) {
		snprintf(file, sizeof(file), "%s/memory%s/memory.usage_in_bytes", fd->root, rel);
		if (try_usage(fd, MEM_CGROUP_V1, file) && !*rel)
			snprintf(fd->s->note, sizeof(fd->s->note),
			         "the root cgroup: usage of the whole machine");
		return fd->s->kind != 0;
	}
	if (!v2)
		return false;
	snprintf(file, sizeof(file), "%s%s/memory.current", fd->root, rel);
	if (try_usage(fd, MEM_CGROUP_V2, file))
		return true;
	snprintf(file, sizeof(file), "%s/unified%s/memory.current", fd->root, rel);
	return try_usage(fd, MEM_CGROUP_V2, file);
}

/* v1's memory line first: on a hybrid system v2 rarely has the controller. */
static bool find_cgroup(struct finder *fd, const char *proc_cgroup)
{
	char line[512];
	FILE *f = fopen(proc_cgroup, "r");
	if (!f) {
		snprintf(fd->tried, sizeof(fd->tried), "%s: %s", proc_cgroup, strerror(errno));
		return false;
	}
	bool found = false;
	for (int v2 = 0; v2 < 2 && !found; v2++) {
		rewind(f);
		while (!found && fgets(line, sizeof(line), f))
			if ((strncmp(line, "0::", 3) == 0) == v2)
				found = try_cgroup_line(fd, line);
	}
	fclose(f);
	return found;
}

void bench_memsrc_find(struct bench_memsrc *s, const char *proc_cgroup, const char *root,
                       const char *statm)
{
	struct finder fd = {.s = s, .root = root};
	memset(s, 0, sizeof(*s));
	if (find_cgroup(&fd, proc_cgroup))
		return;
	s->kind = MEM_RSS;
	snprintf(s->path, sizeof(s->path), "%s", statm);
	snprintf(s->note, sizeof(s->note), "no cgroup memory usage (%s)",
	         fd.tried[0] ? fd.tried : "no memory cgroup listed");
}

int bench_memsrc_read(const struct bench_memsrc *s, size_t page, uint64_t *out)
{
	if (s->kind == MEM_RSS)
		return bench_read_statm(s->path, page, out);
	return bench_read_number(s->path, out);
}
