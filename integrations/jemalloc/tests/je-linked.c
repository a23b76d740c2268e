/* SPDX-License-Identifier: MIT */
/*
 * je-linked: a program linked against the system's jemalloc (Debian's
 * libjemalloc2, 5.3.0: -ljemalloc, its <jemalloc/jemalloc.h>), as
 * redis-server is.  It prints which jemalloc serves it: the "version"
 * mallctl and whether "opt.libpurge" exists, and checks that memory it
 * frees through that jemalloc is served by the same one.
 *
 *   je-linked           prints "version V libpurge yes|no"
 *   je-linked --want-libpurge
 *                       exit 1 unless opt.libpurge exists (the patched
 *                       jemalloc preloaded in front of the system's)
 *
 * test-linked.sh runs it with and without the patched library preloaded.
 */
#include <jemalloc/jemalloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	const char *version = NULL;
	size_t sz = sizeof(version);
	if (mallctl("version", &version, &sz, NULL, 0) || !version) {
		fprintf(stderr, "je-linked: mallctl(\"version\") failed\n");
		return 1;
	}
	bool on = false;
	sz = sizeof(on);
	bool has = mallctl("opt.libpurge", &on, &sz, NULL, 0) == 0;

	/* memory from this jemalloc goes back to it: a round trip that a
	 * mixed-up pair (malloc from one copy, free to the other) crashes */
	for (int i = 0; i < 1000; i++) {
		char *p = malloc((size_t)(i + 1) * 4096);
		if (!p)
			return 1;
		memset(p, i, (size_t)(i + 1) * 4096);
		free(p);
	}
	printf("version %s libpurge %s\n", version, has ? (on ? "yes" : "off") : "no");
	if (argc > 1 && !strcmp(argv[1], "--want-libpurge") && !has) {
		fprintf(stderr,
		        "je-linked: opt.libpurge does not exist: the system's jemalloc (%s) "
		        "serves this program\n",
		        version);
		return 1;
	}
	return 0;
}
