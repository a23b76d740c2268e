/* SPDX-License-Identifier: MIT */
/*
 * Defaults, validation and environment knobs.  A config is judged by one
 * function, config_problem(): purge_queue_init() answers -EINVAL where
 * purge_config_check() names a field.  Environment variables are read
 * when a queue is set up, replace the built-in default of a field the config
 * leaves at 0, and are ignored (and flagged in purge_stats.env_ignored) when
 * invalid: a typo in the environment must not stop an allocator from starting,
 * nor make a config invalid.
 *   PURGE_BATCH = 1..1024          PURGE_MODE = auto | vectored | loop
 */
#include "compat.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "advice.h"
#include "config.h"

/* MAX_RW_COUNT = INT_MAX & PAGE_MASK (include/linux/fs.h): process_madvise
 * silently truncates a call's total there (lib/iov_iter.c __import_iovec). */
static size_t config_max_rw_count(size_t page)
{
	return (size_t)INT_MAX & ~(page - 1);
}

/* Strict decimal parse; false on junk, sign, overflow or out of [lo, hi]. */
static bool config_parse_uint(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
	if (!s || *s < '0' || *s > '9')
		return false;
	unsigned long v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (ULONG_MAX - 9) / 10)
			return false;
		v = v * 10 + (unsigned long)(*s - '0');
	}
	if (v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static void config_env_batch(struct purge__settings *s)
{
	const char *e = getenv("PURGE_BATCH");
	unsigned long v;

	if (!e)
		return;
	if (config_parse_uint(e, 1, PURGE_BATCH_MAX, &v))
		s->batch = (unsigned)v;
	else
		s->env_ignored |= PURGE_ENV_BATCH;
}

/* PURGE_MODE as a mode, or -1 when unset, or -2 when invalid. */
int purge__env_mode(void)
{
	const char *e = getenv("PURGE_MODE");

	if (!e)
		return -1;
	if (!strcmp(e, "auto"))
		return PURGE_MODE_AUTO;
	if (!strcmp(e, "vectored"))
		return PURGE_MODE_VECTORED;
	if (!strcmp(e, "loop"))
		return PURGE_MODE_LOOP;
	return -2;
}

/* One message for each word of purge_config.reserved. */
static const char *const config_reserved_msg[] = {
    "reserved[0]: must be zero", "reserved[1]: must be zero", "reserved[2]: must be zero",
    "reserved[3]: must be zero", "reserved[4]: must be zero", "reserved[5]: must be zero",
    "reserved[6]: must be zero",
};

_Static_assert(sizeof(config_reserved_msg) / sizeof(config_reserved_msg[0]) ==
                   sizeof(((struct purge_config *)0)->reserved) / sizeof(uint64_t),
               "one message for each reserved word");
_Static_assert(PURGE_BATCH_MAX == 1024 && PURGE_CAPACITY_MAX == 16777215u,
               "the messages below spell these limits out");

/* NULL when c is valid, else the first field, in the struct's order, that
 * is not, and the rule it breaks: the one validation of a config, for
 * purge_queue_init() and purge_config_check() alike. */
static const char *config_problem(const struct purge_config *c)
{
	const unsigned flags = PURGE_NO_COALESCE | PURGE_TRIM | PURGE_LOCKED | PURGE_INCREMENTAL |
	                       PURGE_AGES | PURGE_HUGE;

	if (c->advice != 0 && !purge__advice_find(c->advice))
		return "advice: not 0, MADV_DONTNEED, MADV_DONTNEED_LOCKED, MADV_FREE, MADV_COLD "
		       "or MADV_PAGEOUT";
	if (c->batch > PURGE_BATCH_MAX)
		return "batch: above PURGE_BATCH_MAX (1024)";
	if (c->capacity > PURGE_CAPACITY_MAX)
		return "capacity: above PURGE_CAPACITY_MAX (16777215)";
	if (c->flags & ~flags)
		return "flags: a bit that is not a PURGE_* flag";
	/* a whole frame must reach the kernel as one range */
	if ((c->flags & PURGE_HUGE) && (c->flags & PURGE_NO_COALESCE))
		return "flags: PURGE_HUGE with PURGE_NO_COALESCE";
	if (c->mode < PURGE_MODE_AUTO || c->mode > PURGE_MODE_LOOP)
		return "mode: not PURGE_MODE_AUTO, PURGE_MODE_VECTORED or PURGE_MODE_LOOP";
	if (c->reserved32)
		return "reserved32: must be zero";
	for (size_t i = 0; i < sizeof(c->reserved) / sizeof(c->reserved[0]); i++)
		if (c->reserved[i])
			return config_reserved_msg[i];
	return NULL;
}

const char *purge_config_check(const struct purge_config *cfg)
{
	return cfg ? config_problem(cfg) : NULL;
}

int purge__settings_init(struct purge__settings *s, const struct purge_config *cfg, size_t page)
{
	static const struct purge_config zero;
	const struct purge_config *c = cfg ? cfg : &zero;

	if (config_problem(c))
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	s->advice = purge__advice_find(c->advice ? c->advice : MADV_DONTNEED);
	s->batch = PURGE_DEFAULT_BATCH;
	config_env_batch(s);
	if (c->batch)
		s->batch = c->batch;
	s->capacity = c->capacity ? c->capacity : PURGE_DEFAULT_CAPACITY;
	s->mode = c->mode;
	int em = purge__env_mode();
	if (em == -2)
		s->env_ignored |= PURGE_ENV_MODE;
	else if (em >= 0 && c->mode == PURGE_MODE_AUTO)
		s->mode = em;
	s->flags = c->flags;
	s->max_pending_bytes = c->max_pending_bytes;
	s->max_delay_ns = c->max_delay_ns;
	size_t rw = config_max_rw_count(page);
	s->call_bytes =
	    c->max_call_bytes ? c->max_call_bytes & ~(page - 1) : PURGE_DEFAULT_CALL_BYTES;
	if (s->call_bytes < page)
		s->call_bytes = page;
	if (s->call_bytes > rw)
		s->call_bytes = rw;
	s->on_failure = c->on_failure;
	s->arg = c->arg;
	return 0;
}
