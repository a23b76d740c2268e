/* SPDX-License-Identifier: MIT */
/*
 * atfork-first: a library whose constructor registers pthread_atfork
 * handlers before a preloaded allocator's constructor runs (a DT_NEEDED
 * library of the program is initialised before the LD_PRELOAD ones), so
 * that its child handler runs before any the allocator registers, and its
 * prepare handler after.  prepare takes atfork_first_lock, parent and
 * child let it go; with atfork_first_malloc_in_child set, the child
 * handler then allocates and frees a few large blocks (what a child
 * handler that logs or rebuilds a table does).  See forkhang.c.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

pthread_mutex_t atfork_first_lock = PTHREAD_MUTEX_INITIALIZER;
volatile int atfork_first_malloc_in_child;
volatile int atfork_first_registered;

static void prepare(void)
{
	pthread_mutex_lock(&atfork_first_lock);
}

static void parent(void)
{
	pthread_mutex_unlock(&atfork_first_lock);
}

static void child(void)
{
	pthread_mutex_unlock(&atfork_first_lock);
	if (!atfork_first_malloc_in_child)
		return;
	for (int i = 0; i < 4; i++) {
		size_t sz = (size_t)1 << (20 + i);
		char *p = malloc(sz);
		if (p == NULL)
			abort();
		memset(p, 0x11, sz);
		free(p);
	}
}

__attribute__((constructor)) static void atfork_first_init(void)
{
	if (pthread_atfork(prepare, parent, child) == 0)
		atfork_first_registered = 1;
}
