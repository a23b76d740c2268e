/* SPDX-License-Identifier: MIT */
/*
 * A queue's settings: its config after defaults, the environment and
 * validation.  config.c has the code; setup.c fills a queue's settings
 * once, and internal.h keeps them in the queue.
 */
#ifndef PURGE_CONFIG_H
#define PURGE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "advice.h"
#include "purge.h"

#pragma GCC visibility push(hidden) /* internal, as in internal.h */

/* Settings after defaults, environment and validation. */
struct purge__settings {
	const struct purge__advice *advice;
	int mode;
	unsigned batch;
	unsigned capacity;
	unsigned flags;
	size_t max_pending_bytes;
	uint64_t max_delay_ns;
	size_t call_bytes; /* page multiple, >= one page, <= MAX_RW_COUNT */
	unsigned env_ignored;
	void (*on_failure)(void *arg, void *addr, size_t len, int err);
	void *arg;
};

int purge__settings_init(struct purge__settings *s, const struct purge_config *cfg, size_t page);
/* PURGE_MODE as a mode, or -1 when unset, or -2 when invalid. */
int purge__env_mode(void);

#pragma GCC visibility pop

#endif /* PURGE_CONFIG_H */
