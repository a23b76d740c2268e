// SPDX-License-Identifier: MIT
/* purge-bench: the machine facts every result is printed with. */
#include "bench-sysinfo.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "purge.h"

static void copy_str(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src);
}

/* First "model name" line; other architectures name the field differently,
 * so fall back to "unknown" rather than guessing. */
static void read_cpu(char *out, size_t len)
{
	copy_str(out, len, "unknown");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[256];
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon += 1 + (colon[1] == ' ');
		colon[strcspn(colon, "\n")] = 0;
		copy_str(out, len, colon);
		break;
	}
	fclose(f);
}

/* The file reads "always [madvise] never": the bracketed word is the mode. */
static void read_thp(char *out, size_t len)
{
	copy_str(out, len, "unknown");
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (!f)
		return;
	char line[128];
	if (fgets(line, sizeof(line), f)) {
		char *open = strchr(line, '['), *close = open ? strchr(open, ']') : NULL;
		if (close) {
			*close = 0;
			copy_str(out, len, open + 1);
		}
	}
	fclose(f);
}

void bench_loadavg(char *out, size_t len)
{
	double a[3];
	copy_str(out, len, "unknown");
	FILE *f = fopen("/proc/loadavg", "r");
	if (!f)
		return;
	if (fscanf(f, "%lf %lf %lf", &a[0], &a[1], &a[2]) == 3)
		snprintf(out, len, "%.2f %.2f %.2f", a[0], a[1], a[2]);
	fclose(f);
}

static const char *backend_name(int b)
{
	switch (b) {
	case PURGE_BACKEND_VECTORED:
		return "vectored (process_madvise)";
	case PURGE_BACKEND_LOOP:
		return "loop (madvise)";
	default:
		return "error";
	}
}

void bench_machine_read(struct bench_machine *m, int advice)
{
	struct utsname u;
	read_cpu(m->cpu, sizeof(m->cpu));
	read_thp(m->thp, sizeof(m->thp));
	m->cores = sysconf(_SC_NPROCESSORS_ONLN);
	m->page = sysconf(_SC_PAGESIZE);
	copy_str(m->kernel, sizeof(m->kernel), "unknown");
	copy_str(m->arch, sizeof(m->arch), "unknown");
	if (uname(&u) == 0) {
		copy_str(m->kernel, sizeof(m->kernel), u.release);
		copy_str(m->arch, sizeof(m->arch), u.machine);
	}
	m->backend = backend_name(purge_backend(advice));
	bench_loadavg(m->load_start, sizeof(m->load_start));
	copy_str(m->load_end, sizeof(m->load_end), "unknown");
}
