/* SPDX-License-Identifier: MIT */
/*
 * The advice table's rows (advice.h).
 */
#include "compat.h"

#include <stddef.h>
#include <sys/mman.h>

#include "advice.h"

/* Every advice the library takes.  After DONTNEED a private anonymous
 * page reads back as zeros; after FREE it may keep its old bytes until
 * reclaimed; COLD and PAGEOUT keep contents (docs/kernel-notes.md §5). */
static const struct purge__advice advice_table[] = {
    {MADV_DONTNEED, "dontneed", true}, {MADV_DONTNEED_LOCKED, "dontneed_locked", true},
    {MADV_FREE, "free", false},        {MADV_COLD, "cold", false},
    {MADV_PAGEOUT, "pageout", false},
};

_Static_assert(sizeof(advice_table) / sizeof(advice_table[0]) == PURGE_ADVICE_COUNT,
               "PURGE_ADVICE_COUNT sizes the probe's slots: one a row");

const struct purge__advice *purge__advice_find(int advice)
{
	for (unsigned i = 0; i < PURGE_ADVICE_COUNT; i++)
		if (advice_table[i].value == advice)
			return &advice_table[i];
	return NULL;
}

unsigned purge__advice_slot(const struct purge__advice *a)
{
	return (unsigned)(a - advice_table);
}
