// SPDX-License-Identifier: MIT
/* Unit test of purge-bench's memory readers, on fake /proc and /sys
 * files in a fresh directory. */
#include "bench_test.h"

/* The memory readers, on fake /proc and /sys files in a fresh directory. */
static char fake_dir[64];

/* name under the fake directory, in one of 16 rotating buffers */
static const char *fake_path(const char *name)
{
	static char bufs[16][256];
	static unsigned next;
	char *b = bufs[next++ % 16];
	snprintf(b, sizeof(bufs[0]), "%s/%s", fake_dir, name);
	return b;
}

/* Write text to name under the fake directory, making its folders. */
static const char *fake_file(const char *name, const char *text)
{
	char dir[256];
	if (!fake_dir[0]) {
		strcpy(fake_dir, "/tmp/test-bench-XXXXXX");
		cr_assert(mkdtemp(fake_dir));
	}
	const char *path = fake_path(name);
	snprintf(dir, sizeof(dir), "%s", path);
	for (char *s = strchr(dir + strlen(fake_dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		mkdir(dir, 0700);
		*s = '/';
	}
	FILE *f = fopen(path, "w");
	cr_assert(f, "%s", path);
	fputs(text, f);
	fclose(f);
	return path;
}

static void fake_cleanup(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fake_dir);
	if (fake_dir[0] && system(cmd))
		fprintf(stderr, "could not remove %s\n", fake_dir);
}

TestSuite(mem, .fini = fake_cleanup);

Test(mem, vmstat_key)
{
	const char *vmstat = fake_file("vmstat", "thp_split_page 7\n"
	                                         "thp_split_page_failed 0\n"
	                                         "thp_split_pmd 12345\n"
	                                         "thp_split_pmd_x 1\n");
	uint64_t v = 99;
	cr_expect_eq(bench_read_key(vmstat, "thp_split_pmd", &v), 0);
	cr_expect_eq(v, 12345, "not thp_split_page nor a longer name: %" PRIu64, v);
	cr_expect_eq(bench_read_key(vmstat, "thp_split", &v), -ENOENT, "a prefix is no key");
	cr_expect_eq(bench_read_key(vmstat, "thp_split_pud", &v), -ENOENT);
	cr_expect_eq(bench_read_key(fake_path("none"), "thp_split_pmd", &v), -ENOENT,
	             "a missing file: its errno");
	cr_expect_eq(v, 12345, "output written on error");
	const char *bad = fake_file("bad", "thp_split_pmd lots\n");
	cr_expect_eq(bench_read_key(bad, "thp_split_pmd", &v), -EINVAL);
}

Test(mem, smaps_rollup_key)
{
	const char *smaps =
	    fake_file("smaps_rollup", "55d0c0000000-7ffd00000000 ---p 00000000 00:00 0   [rollup]\n"
	                              "Rss:               70000 kB\n"
	                              "AnonHugePages:     65536 kB\n"
	                              "ShmemPmdMapped:        0 kB\n");
	uint64_t v = 0;
	cr_expect_eq(bench_read_key(smaps, "AnonHugePages:", &v), 0);
	cr_expect_eq(v, 65536);
	cr_expect_eq(bench_read_key(smaps, "Rss:", &v), 0);
	cr_expect_eq(v, 70000);
}

Test(mem, number_and_statm)
{
	uint64_t v = 0;
	cr_expect_eq(bench_read_number(fake_file("hpage_pmd_size", "2097152\n"), &v), 0);
	cr_expect_eq(v, 2097152);
	cr_expect_eq(bench_read_number(fake_file("empty", ""), &v), -EINVAL);
	cr_expect_eq(bench_read_number(fake_file("word", "max\n"), &v), -EINVAL);
	cr_expect_eq(bench_read_statm(fake_file("statm", "5000 1200 300 10 0 900 0\n"), 4096, &v),
	             0);
	cr_expect_eq(v, 1200 * 4096, "the second field, in pages");
	cr_expect_eq(bench_read_statm(fake_file("statm1", "5000\n"), 4096, &v), -EINVAL);
}

Test(mem, cgroup_v1)
{
	const char *cg = fake_file("cgroup", "9:name=systemd:/\n"
	                                     "5:devices:/\n"
	                                     "4:cpu,memory:/jobs/42\n"
	                                     "0::/\n");
	fake_file("root/memory/jobs/42/memory.usage_in_bytes", "83410944\n");
	struct bench_memsrc s;
	uint64_t v = 0;
	bench_memsrc_find(&s, cg, fake_path("root"), fake_path("statm"));
	cr_expect_eq(s.kind, MEM_CGROUP_V1, "%s", s.note);
	cr_expect(strstr(s.path, "/root/memory/jobs/42/memory.usage_in_bytes"), "%s", s.path);
	cr_expect_eq(bench_memsrc_read(&s, 4096, &v), 0);
	cr_expect_eq(v, 83410944);
}

Test(mem, cgroup_v2)
{
	const char *cg = fake_file("cgroup2", "0::/user.slice/job\n");
	fake_file("root2/user.slice/job/memory.current", "1048576\n");
	struct bench_memsrc s;
	uint64_t v = 0;
	bench_memsrc_find(&s, cg, fake_path("root2"), fake_path("statm"));
	cr_expect_eq(s.kind, MEM_CGROUP_V2, "%s", s.note);
	cr_expect_eq(bench_memsrc_read(&s, 4096, &v), 0);
	cr_expect_eq(v, 1048576);
	/* a hybrid system mounts v2 under unified/ */
	fake_file("root3/unified/user.slice/job/memory.current", "2097152\n");
	bench_memsrc_find(&s, cg, fake_path("root3"), fake_path("statm"));
	cr_expect_eq(s.kind, MEM_CGROUP_V2, "%s", s.note);
	cr_expect_eq(bench_memsrc_read(&s, 4096, &v), 0);
	cr_expect_eq(v, 2097152);
}

/* No readable cgroup file: RSS from statm, and the reason. */
Test(mem, cgroup_unreadable_falls_back_to_rss)
{
	const char *cg = fake_file("cgroup4", "4:memory:/gone\n0::/gone\n");
	const char *statm = fake_file("statm4", "100 25 0 0 0 0 0\n");
	struct bench_memsrc s;
	uint64_t v = 0;
	bench_memsrc_find(&s, cg, fake_path("root4"), statm);
	cr_expect_eq(s.kind, MEM_RSS);
	cr_expect(strstr(s.note, "memory.usage_in_bytes"), "names what it tried: %s", s.note);
	cr_expect_str_eq(s.path, statm);
	cr_expect_eq(bench_memsrc_read(&s, 4096, &v), 0);
	cr_expect_eq(v, 25 * 4096);
	bench_memsrc_find(&s, fake_path("no-such-cgroup"), fake_path("root4"), statm);
	cr_expect_eq(s.kind, MEM_RSS);
	cr_expect(strstr(s.note, "no-such-cgroup"), "%s", s.note);
}

/* v1's root cgroup counts the whole machine: kept, with a caveat. */
Test(mem, cgroup_v1_root)
{
	const char *cg = fake_file("cgroup5", "4:memory:/\n");
	fake_file("root5/memory/memory.usage_in_bytes", "625348608\n");
	struct bench_memsrc s;
	bench_memsrc_find(&s, cg, fake_path("root5"), fake_path("statm"));
	cr_expect_eq(s.kind, MEM_CGROUP_V1);
	cr_expect(strstr(s.path, "root5/memory/memory.usage_in_bytes"), "%s", s.path);
	cr_expect(strstr(s.note, "root cgroup"), "%s", s.note);
}
