/* SPDX-License-Identifier: MIT */
/*
 * The fake-kernel fixture of the queue and fake suites: a fake kernel over
 * FIXTURE_NPAGES pages at FIXTURE_BASE (defined by the suite before it
 * includes this), every on_failure report recorded, queues in memory the
 * suite frees at teardown.  The suite names its TestSuite with
 * .init = setup, .fini = teardown.
 */
#ifndef TESTS_FIXTURE_H
#define TESTS_FIXTURE_H

#include "common.h"
#include "fake_kernel.h"

static struct fake_kernel fk;
static struct failures fails;

static void setup(void)
{
	fake_init(&fk, FIXTURE_BASE, FIXTURE_NPAGES);
	fails.n = 0;
}

static void teardown(void)
{
	fake_free(&fk);
	test_free_all();
}

/* A queue on the fake kernel, its failures recorded in `fails`. */
static inline purge_queue *mkq_ret(struct purge_config *cfg, int *ret)
{
	struct purge_config def = {0};
	cfg = cfg ? cfg : &def;
	cfg->on_failure = record_failure;
	cfg->arg = &fails;
	size_t bytes = purge_queue_bytes(cfg->capacity);
	void *mem = test_alloc(bytes);
	purge_queue *q = NULL;
	*ret = purge__queue_init_backend(&q, mem, bytes, cfg, &fk.be);
	return q;
}

static inline purge_queue *mkq(struct purge_config *cfg)
{
	int ret;
	purge_queue *q = mkq_ret(cfg, &ret);
	cr_assert_eq(ret, 0);
	return q;
}

static inline uintptr_t pg(size_t i)
{
	return FIXTURE_BASE + i * PAGE;
}

#endif
