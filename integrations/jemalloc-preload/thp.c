/* SPDX-License-Identifier: MIT */
/*
 * Huge pages: what jemalloc asks of transparent huge pages (opt.thp), what
 * the system does (/sys/kernel/mm/transparent_hugepage/enabled), and what
 * the shim does about them.
 *
 *  - Its mappings get the hint jemalloc's own would get.  The shim's alloc
 *    hook replaces jemalloc's default one, which ends in pages_map() and
 *    pages_set_thp_state() (jemalloc 5.3 src/pages.c): MADV_HUGEPAGE on
 *    every mapping when opt.thp is "always" and the system is "madvise",
 *    MADV_NOHUGEPAGE when opt.thp is "never" and the system is not; no
 *    call when they agree ("default" is the system's choice).  Without the
 *    same hint here, MALLOC_CONF=thp:always would get no huge page under
 *    the shim where the system says "madvise".
 *  - Its queues plan around huge-page frames (PURGE_HUGE) when huge pages
 *    back its memory: opt.thp "always" (and the system not "never"), or
 *    "default" with the system at "always".  Purging part of a huge page
 *    splits it, and the split page stays charged to the memory cgroup
 *    until the kernel's deferred split runs; with PURGE_HUGE the parts
 *    wait for their whole frame (or MAX_DELAY_MS, or a purge_flush).
 *    PURGE_JEMALLOC_HUGE=0/1 overrides that choice, not the hint.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim.h"

/* The bracketed word of a sysfs mode file ("always [madvise] never"), or
 * "" when it cannot be read (no THP in this kernel). */
static void thp_sys_mode(char *out, size_t len)
{
	char buf[128];
	int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	out[0] = '\0';
	buf[n > 0 ? n : 0] = '\0';
	char *lb = strchr(buf, '['), *rb = lb ? strchr(lb, ']') : NULL;
	if (!rb || (size_t)(rb - lb) > len)
		return;
	memcpy(out, lb + 1, (size_t)(rb - lb - 1));
	out[rb - lb - 1] = '\0';
}

/* jemalloc 5.3's pages_set_thp_state(), with the system's "madvise" for
 * its thp_mode_default. */
static int thp_hint_for(const char *je, const char *sys)
{
	if (!strcmp(je, "always") && !strcmp(sys, "madvise"))
		return MADV_HUGEPAGE;
	if (!strcmp(je, "never") && (!strcmp(sys, "always") || !strcmp(sys, "madvise")))
		return MADV_NOHUGEPAGE;
	return 0;
}

static bool thp_backs(const char *je, const char *sys)
{
	if (!strcmp(sys, "never") || !sys[0])
		return false;
	return !strcmp(je, "always") || (!strcmp(je, "default") && !strcmp(sys, "always"));
}

void thp_setup(const char *je_thp)
{
	struct shim_thp *t = &shim.thp;
	const char *env = getenv("PURGE_JEMALLOC_HUGE");

	snprintf(t->je, sizeof(t->je), "%s", je_thp ? je_thp : "");
	thp_sys_mode(t->sys, sizeof(t->sys));
	t->hint = thp_hint_for(t->je, t->sys);
	shim.cfg.huge = thp_backs(t->je, t->sys);
	t->forced = env && (!strcmp(env, "0") || !strcmp(env, "1"));
	if (t->forced)
		shim.cfg.huge = env[0] == '1';
	else
		t->bad_env = env != NULL;
}

/* Fresh mappings only: pool ranges keep the flag of the mapping they came
 * from.  A failure costs huge pages, nothing else: not reported. */
void thp_hint(void *addr, size_t len)
{
	int saved = errno;

	if (shim.thp.hint)
		(void)madvise(addr, len, shim.thp.hint);
	errno = saved;
}
