/* SPDX-License-Identifier: MIT */
/*
 * The model (expect.h), written from purge.h's contract rather than from
 * the library's code: ranges are a plain list, cancel trims and splits
 * them, the thresholds and partial flushes pick the oldest.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../store_check.h"
#include "expect.h"

/* ---- the list ------------------------------------------------------------ */

/* "Ranges settle in enqueue order; the parts a cancel splits off a range
 * keep its place, in address order" (a split part keeps its range's seq). */
static bool older(const struct mrange *a, const struct mrange *b)
{
	if (a->stamp != b->stamp)
		return a->stamp < b->stamp;
	return a->seq != b->seq ? a->seq < b->seq : a->s < b->s;
}

static size_t oldest_at(const struct fz *z)
{
	size_t o = 0;

	for (size_t k = 1; k < z->n; k++)
		if (older(&z->l[k], &z->l[o]))
			o = k;
	return o;
}

uint64_t m_oldest(const struct fz *z)
{
	return z->n ? z->l[oldest_at(z)].stamp : 0;
}

static size_t pool(const struct fz *z)
{
	return purge__pool_pieces(z->cfg.capacity ? z->cfg.capacity : PURGE_DEFAULT_CAPACITY);
}

static void add(struct fz *z, struct mrange r)
{
	CHECK(z, z->n < MAXL, "model list full");
	z->l[z->n++] = r;
	z->pend += r.e - r.s;
}

/* Range k is settled by a flush: remembered for the end-of-op checks. */
static void settle_at(struct fz *z, size_t k)
{
	CHECK(z, z->ndone < 2 * MAXL, "too many settled");
	z->done[z->ndone++] = z->l[k];
	z->pend -= z->l[k].e - z->l[k].s;
	z->l[k] = z->l[--z->n];
}

static size_t settle_oldest(struct fz *z, size_t max, uint64_t max_stamp, uint64_t max_bytes)
{
	size_t n = 0;
	uint64_t bytes = 0;

	while (n < max && bytes < max_bytes && z->n) {
		size_t k = oldest_at(z);
		if (z->l[k].stamp > max_stamp)
			break;
		bytes += z->l[k].e - z->l[k].s;
		settle_at(z, k);
		n++;
	}
	return n;
}

static unsigned batch(const struct fz *z)
{
	return purge_get_batch(z->q);
}

static bool stats_zeroed(const struct fz *z)
{
	struct purge_stats st;

	purge_get_stats(z->q, &st);
	return st.zeroed;
}

/* ---- the calls ----------------------------------------------------------- */

static bool huge_now(struct fz *z, bool *huge);
static void dump(const struct fz *z);

static bool huge(const struct fz *z)
{
	return z->cfg.flags & PURGE_HUGE;
}

/* A holding flush may follow: count, from here on, what the kernel takes. */
static void watch(struct fz *z)
{
	z->observe = true;
	memset(z->applied, 0, sizeof(z->applied));
}

/* Room for `need` more ranges: the oldest `batch` at a time, one flush. */
static void room(struct fz *z, size_t need)
{
	if (pool(z) - z->n >= need)
		return;
	z->flushes++;
	while (settle_oldest(z, batch(z), UINT64_MAX, UINT64_MAX) && pool(z) - z->n < need)
		;
}

static unsigned over(const struct fz *z)
{
	unsigned c = 0;
	const struct purge_config *g = &z->cfg;

	if (z->n >= (g->capacity ? g->capacity : PURGE_DEFAULT_CAPACITY))
		c |= 1;
	if (g->max_pending_bytes && z->pend > g->max_pending_bytes)
		c |= 2;
	if (g->max_delay_ns && z->n && z->now - m_oldest(z) >= g->max_delay_ns)
		c |= 4;
	return c;
}

void m_flush_all(struct fz *z)
{
	if (!z->n)
		return;
	z->flushes++;
	while (z->n)
		settle_at(z, 0);
}

void m_enqueue(struct fz *z, uintptr_t s, uintptr_t e)
{
	struct mrange r = {s, e, z->now, ++z->seq, false};

	/* with PURGE_HUGE the model observes the whole enqueue, room and all:
	 * room first, made from the oldest, when the pool is full */
	z->last.room = huge(z) && z->n == pool(z);
	if (!huge(z))
		room(z, 1);
	for (size_t k = 0; k < z->n; k++)
		if (z->l[k].s < e && s < z->l[k].e)
			z->l[k].flag = r.flag = true;
	add(z, r);
	z->enq += e - s;
	for (uintptr_t a = s; a < e; a += z->page) { /* the allocator's side of the rule */
		size_t i = fz_pidx(z, a);
		z->zclean[i] = true;
		memset(&z->wrote[i * NQ], 0, NQ);
	}
	if (huge(z)) {
		watch(z);
		return;
	}
	unsigned c = over(z);
	if (!c)
		return;
	if (!(z->cfg.flags & PURGE_INCREMENTAL)) {
		m_flush_all(z);
		return;
	}
	z->flushes++;
	while (settle_oldest(z, batch(z), UINT64_MAX, UINT64_MAX) && (over(z) & c))
		;
}

/* Would enqueueing [s, e) keep the overlapping ranges within OVLB? */
bool m_overlap_ok(const struct fz *z, uintptr_t s, uintptr_t e)
{
	size_t flagged = 0, more = 0;
	bool any = false;

	for (size_t k = 0; k < z->n; k++) {
		bool hit = z->l[k].s < e && s < z->l[k].e;
		flagged += z->l[k].flag;
		more += hit && !z->l[k].flag;
		any |= hit;
	}
	return !any || flagged + more + 1 <= OVLB;
}

/* Would cancelling [s, e) keep the overlapping ranges within OVLB?  A
 * split of one of them is one more. */
bool m_cancel_ok(const struct fz *z, uintptr_t s, uintptr_t e)
{
	size_t flagged = 0, splits = 0;

	for (size_t k = 0; k < z->n; k++) {
		flagged += z->l[k].flag;
		splits += z->l[k].flag && z->l[k].s < s && z->l[k].e > e;
	}
	return !splits || flagged + splits <= OVLB;
}

/* "ranges inside it are dropped, ranges overlapping it are trimmed or
 * split (a split part keeps its age)" */
static bool cut(struct fz *z, size_t k, uintptr_t a, uintptr_t b)
{
	struct mrange *p = &z->l[k];

	if (p->e <= a || p->s >= b)
		return false;
	uintptr_t lo = p->s > a ? p->s : a, hi = p->e < b ? p->e : b;
	z->canc += hi - lo;
	z->pend -= hi - lo;
	if (p->s < a && p->e > b) {
		struct mrange r = *p; /* keeps p's age and place */
		r.s = b;
		p->e = a;
		z->pend -= r.e - r.s; /* add() counts it again */
		add(z, r);
	} else if (p->s < a) {
		p->e = a;
	} else {
		p->s = b;
	}
	return true;
}

/* Ranges a cancel of [a, b) splits: those that hold it strictly inside. */
static size_t splits(const struct fz *z, uintptr_t a, uintptr_t b)
{
	size_t n = 0;

	for (size_t k = 0; k < z->n; k++)
		n += z->l[k].s < a && z->l[k].e > b;
	return n;
}

bool m_cancel(struct fz *z, uintptr_t a, uintptr_t b)
{
	bool any = false;

	/* "when splits have used up the queue's spare room the oldest batch
	 * ranges are settled first" */
	for (size_t need; (need = splits(z, a, b)) > pool(z) - z->n;)
		room(z, need);
	for (size_t k = 0; k < z->n;) {
		any |= cut(z, k, a, b);
		if (z->l[k].s >= z->l[k].e)
			z->l[k] = z->l[--z->n];
		else
			k++;
	}
	return any;
}

void m_flush_older(struct fz *z, uint64_t age)
{
	if (age == 0) {
		m_flush_all(z);
		return;
	}
	if (!z->n || z->now < age || m_oldest(z) > z->now - age)
		return;
	z->flushes++;
	settle_oldest(z, SIZE_MAX, z->now - age, UINT64_MAX);
}

void m_flush_to(struct fz *z, uint64_t keep)
{
	if (z->pend <= keep)
		return;
	if (huge(z)) {
		watch(z);
		return;
	}
	z->flushes++;
	settle_oldest(z, SIZE_MAX, UINT64_MAX, z->pend - keep);
}

/* Without PURGE_HUGE, purge_flush_older's ranges, and the deadline: the
 * oldest range's age. */
void m_flush_due(struct fz *z, uint64_t age, uint64_t *next)
{
	if (huge(z)) {
		watch(z);
		return;
	}
	if (z->n && m_oldest(z) + age <= z->now) {
		z->flushes++;
		settle_oldest(z, SIZE_MAX, z->now - age, UINT64_MAX);
	}
	*next = z->n ? m_oldest(z) + age : UINT64_MAX;
}

void m_before(struct fz *z, int kind, uint64_t arg)
{
	struct purge_stats st;

	purge_get_stats(z->q, &st);
	z->last.kind = kind;
	z->last.arg = arg;
	z->last.auto_flushes = st.auto_flushes;
	if (!huge_now(z, z->last.huge))
		memset(z->last.huge, 0, sizeof(z->last.huge));
}

void m_reset(struct fz *z)
{
	memset(z->zclean, 0, sizeof(z->zclean)); /* the rule is about one queue */
	z->n = 0;
	z->enq = z->canc = z->pend = z->flushes = 0;
	z->seen_purged = z->seen_failed = 0;
}

/* ---- the checks ---------------------------------------------------------- */

static bool bad_page(const struct fz *z, size_t i)
{
	return z->locked[i] || (!z->o->real_kernel && z->fk.fail[i]);
}

/* A forced vectored queue reports every range once process_madvise is
 * refused for good. */
static bool refusal_possible(const struct fz *z)
{
	return !z->o->real_kernel && z->fk.refuse && z->cfg.mode == PURGE_MODE_VECTORED;
}

/* The most bytes one call advises (0 is PURGE_DEFAULT_CALL_BYTES). */
static size_t call_cap(const struct fz *z)
{
	return z->cfg.max_call_bytes ? z->cfg.max_call_bytes : PURGE_DEFAULT_CALL_BYTES;
}

/* Bytes of the settled ranges that had to fail and that could fail: a
 * range with a refused page fails whole, or, when max_call_bytes cut it
 * between calls, the parts with such a page; a range without one is purged. */
static void fail_bounds(struct fz *z, uint64_t *lo, uint64_t *hi)
{
	*lo = *hi = 0;
	for (size_t k = 0; k < z->ndone; k++) {
		const struct mrange *d = &z->done[k];
		size_t len = d->e - d->s, bad = 0;
		for (uintptr_t a = d->s; a < d->e; a += z->page)
			bad += bad_page(z, fz_pidx(z, a));
		if (refusal_possible(z)) {
			*lo += bad * z->page;
			*hi += len;
		} else if (bad) {
			/* a range cut between calls (max_call_bytes) or at frame
			 * boundaries (PURGE_HUGE) fails in the parts with such a page */
			*lo += call_cap(z) >= NP * z->page && !huge(z) ? len : bad * z->page;
			*hi += len;
		}
	}
}

/* Each report lies inside one settled range, which had a reason to fail. */
static uint64_t check_reports(struct fz *z)
{
	uint64_t bytes = 0;

	for (size_t f = 0; f < z->nf; f++) {
		bool inside = false, why = refusal_possible(z);
		for (size_t k = 0; k < z->ndone && !inside; k++)
			inside = z->done[k].s <= z->f[f].s && z->f[f].e <= z->done[k].e;
		for (uintptr_t a = z->f[f].s; a < z->f[f].e; a += z->page)
			why |= bad_page(z, fz_pidx(z, a));
		CHECK(z, inside, "report %zu+%zu spans ranges", fz_pidx(z, z->f[f].s),
		      (size_t)(z->f[f].e - z->f[f].s) / z->page);
		CHECK(z, why, "report %zu+%zu (%d) for no reason", fz_pidx(z, z->f[f].s),
		      (size_t)(z->f[f].e - z->f[f].s) / z->page, z->f[f].err);
		bytes += z->f[f].e - z->f[f].s;
	}
	return bytes;
}

/* Settled pages: a refused page keeps its bytes; a range with none is zero;
 * the rest of a failed range may be either.  Called once the library call
 * returned, before the driver writes to any page again. */
void m_expect_settled(struct fz *z)
{
	for (size_t k = z->nexpect; k < z->ndone; k++) {
		const struct mrange *d = &z->done[k];
		bool clean = !refusal_possible(z);
		for (uintptr_t a = d->s; a < d->e; a += z->page)
			clean &= !bad_page(z, fz_pidx(z, a));
		for (uintptr_t a = d->s; a < d->e; a += z->page) {
			size_t i = fz_pidx(z, a);
			if (!bad_page(z, i))
				memset(&z->expect[i * NQ], clean ? E_ZERO : E_ANY, NQ);
		}
	}
	z->nexpect = z->ndone;
}

/* Condition 5 of the rule: a page a report named is not known to be zero. */
static void note_reports(struct fz *z)
{
	for (size_t f = 0; f < z->nf; f++)
		for (uintptr_t a = z->f[f].s; a < z->f[f].e; a += z->page)
			z->zclean[fz_pidx(z, a)] = false;
}

static bool slot_is(const struct fz *z, size_t k, uint8_t b)
{
	size_t q = z->page / NQ;
	const volatile uint8_t *p = (const uint8_t *)(z->r + k * q);

	return p[0] == b && p[q / 2] == b && p[q - 1] == b;
}

/* purge.h, "Reuse and zeroes": [s, e) reads as zero when cancel answered
 * 0, the advice zeroes, every page it touches was enqueued and since then
 * touched by no cancel that answered 1 and named by no report, and nothing
 * wrote to [s, e) itself since.  The allocator's side is all the model
 * knows: it reads back every such claim. */
void m_zero_claim(struct fz *z, uintptr_t s, uintptr_t e, int ret)
{
	uintptr_t mask = z->page - 1, lo = (uintptr_t)z->r, hi = lo + NP * z->page;
	uintptr_t ws = s & ~mask, we = (e + mask) & ~mask;
	size_t q = z->page / NQ;
	bool claim = ret == 0 && ws >= lo && we <= hi;

	note_reports(z);
	for (uintptr_t a = ws > lo ? ws : lo; a < (we < hi ? we : hi); a += z->page) {
		claim &= z->zclean[fz_pidx(z, a)];
		if (ret) /* condition 4: it took back the purge of the whole page */
			z->zclean[fz_pidx(z, a)] = false;
	}
	if (!claim || !stats_zeroed(z))
		return;
	size_t k0 = (s - lo) / q, k1 = (e - lo + q - 1) / q;
	for (size_t k = k0; k < k1; k++)
		claim &= !z->wrote[k];
	for (size_t k = k0; claim && k < k1; k++)
		CHECK(z, slot_is(z, k, 0),
		      "zero claim: cancel of %#zx+%zu answered 0, slot %zu of page %zu is not zero",
		      (size_t)(s - lo), (size_t)(e - s), k % NQ, k / NQ);
	z->zclaims += claim;
}

/* What the operation settled and reported, for a failure message. */
static void dump(const struct fz *z)
{
	fprintf(stderr, "fuzz: pending in the model:");
	for (size_t k = 0; k < z->n; k++)
		fprintf(stderr, " %zu+%zu%s", fz_pidx(z, z->l[k].s),
		        (size_t)(z->l[k].e - z->l[k].s) / z->page, z->l[k].flag ? "*" : "");
	fputc('\n', stderr);
	struct purge_stats st;
	purge_get_stats(z->q, &st);
	fprintf(stderr,
	        "fuzz: capacity %u batch %u flags %#x mode %d max_call_bytes %zu max_pending_bytes "
	        "%zu max_delay_ns %llu; stats: %llu pending (%llu held), %llu flushes (%llu "
	        "automatic)\n",
	        z->cfg.capacity, purge_get_batch(z->q), z->cfg.flags, z->cfg.mode,
	        z->cfg.max_call_bytes, z->cfg.max_pending_bytes,
	        (unsigned long long)z->cfg.max_delay_ns, (unsigned long long)st.pending_ranges,
	        (unsigned long long)st.held_ranges, (unsigned long long)st.flushes,
	        (unsigned long long)st.auto_flushes);
	for (size_t k = 0; k < z->ndone; k++) {
		fprintf(stderr, "fuzz: settled %zu+%zu bad:", fz_pidx(z, z->done[k].s),
		        (size_t)(z->done[k].e - z->done[k].s) / z->page);
		for (uintptr_t a = z->done[k].s; a < z->done[k].e; a += z->page)
			if (bad_page(z, fz_pidx(z, a)))
				fprintf(stderr, " %zu", fz_pidx(z, a));
		fputc('\n', stderr);
	}
	for (size_t f = 0; f < z->nf; f++)
		fprintf(stderr, "fuzz: report %zu+%zu err %d\n", fz_pidx(z, z->f[f].s),
		        (size_t)(z->f[f].e - z->f[f].s) / z->page, z->f[f].err);
}

static void check_books(struct fz *z)
{
	struct purge_stats st;
	uint64_t settled = 0, lo, hi;

	purge_get_stats(z->q, &st);
	for (size_t k = 0; k < z->ndone; k++)
		settled += z->done[k].e - z->done[k].s;
	uint64_t dp = st.purged_bytes - z->seen_purged, df = st.failed_bytes - z->seen_failed;
	fail_bounds(z, &lo, &hi);
	if (lo > df || df > hi || dp + df != settled)
		dump(z);
	CHECK(z, dp + df == settled, "settled %llu + %llu, model %llu", (unsigned long long)dp,
	      (unsigned long long)df, (unsigned long long)settled);
	CHECK(z, lo <= df && df <= hi, "failed %llu, model %llu..%llu", (unsigned long long)df,
	      (unsigned long long)lo, (unsigned long long)hi);
	CHECK(z, check_reports(z) == df, "reported bytes differ from failed_bytes");
	CHECK(z, st.enqueued_bytes == z->enq, "enqueued %llu, model %llu",
	      (unsigned long long)st.enqueued_bytes, (unsigned long long)z->enq);
	CHECK(z, st.cancelled_bytes == z->canc, "cancelled %llu, model %llu",
	      (unsigned long long)st.cancelled_bytes, (unsigned long long)z->canc);
	CHECK(z, st.pending_bytes == z->pend, "pending %llu, model %llu",
	      (unsigned long long)st.pending_bytes, (unsigned long long)z->pend);
	CHECK(z, st.pending_ranges == z->n, "pending ranges %llu, model %zu",
	      (unsigned long long)st.pending_ranges, z->n);
	CHECK(z, st.flushes == z->flushes, "flushes %llu, model %llu",
	      (unsigned long long)st.flushes, (unsigned long long)z->flushes);
	CHECK(z,
	      st.enqueued_bytes ==
	          st.purged_bytes + st.cancelled_bytes + st.failed_bytes + st.pending_bytes,
	      "accounting identity broken");
	z->seen_purged = st.purged_bytes;
	z->seen_failed = st.failed_bytes;
}

static bool pending(const struct fz *z, size_t i)
{
	uintptr_t a = fz_pa(z, i);

	for (size_t k = 0; k < z->n; k++)
		if (z->l[k].s <= a && a < z->l[k].e)
			return true;
	return false;
}

static void check_pages(struct fz *z)
{
	if (z->o->verbose)
		dump(z);
	for (size_t k = 0; k < NP * NQ; k++) {
		if (pending(z, k / NQ) || z->expect[k] == E_ANY)
			continue;
		if (z->expect[k] == E_PATTERN)
			CHECK(z, slot_is(z, k, z->pat[k]), "page %zu slot %zu: live data destroyed",
			      k / NQ, k % NQ);
		else
			CHECK(z, slot_is(z, k, 0), "page %zu slot %zu: enqueued but not purged",
			      k / NQ, k % NQ);
	}
}

void m_check(struct fz *z)
{
	const char *why = store_check(z->q);

	m_observe(z);
	CHECK(z, why == NULL, "store: %s", why);
	note_reports(z);
	check_books(z);
	m_contract(z);
	m_expect_settled(z);
	check_pages(z);
	CHECK(z, purge_oldest_ns(z->q) == m_oldest(z), "oldest %llu, model %llu",
	      (unsigned long long)purge_oldest_ns(z->q), (unsigned long long)m_oldest(z));
	CHECK(z, z->fk.violations == 0, "the library sent a bad iovec");
	z->ndone = z->nexpect = 0;
	z->nf = 0;
}

/* ---- PURGE_HUGE: observing a holding flush ------------------------------ */

/* The copies of each page the call settled: purged (the kernel took them:
 * the backend counted) or named by a report.  A page pending in several
 * ranges (enqueued over pending bytes) may lose some of them: the oldest
 * go first ("ranges settle in enqueue order"), and a frame plan takes
 * every copy of the bytes it settles. */
static void settled_copies(const struct fz *z, unsigned *left)
{
	memcpy(left, z->applied, NP * sizeof(*left));
	for (size_t f = 0; f < z->nf; f++)
		for (uintptr_t a = z->f[f].s; a < z->f[f].e; a += z->page)
			left[fz_pidx(z, a)]++;
}

/* Range k loses its pages settled by the call: the parts left stay
 * pending, with its age and place; the parts settled are done. */
static void observe_range(struct fz *z, size_t k, unsigned *left, struct mrange *keep,
                          size_t *nkeep)
{
	struct mrange r = z->l[k];
	bool gone[NP];

	for (uintptr_t a = r.s; a < r.e; a += z->page) {
		size_t i = fz_pidx(z, a);
		gone[i] = left[i] > 0;
		left[i] -= gone[i];
	}
	for (uintptr_t a = r.s; a < r.e;) {
		bool g = gone[fz_pidx(z, a)];
		uintptr_t b = a;
		while (b < r.e && gone[fz_pidx(z, b)] == g)
			b += z->page;
		struct mrange part = r;
		part.s = a;
		part.e = b;
		if (g) {
			CHECK(z, z->ndone < 2 * MAXL, "too many settled");
			z->done[z->ndone++] = part;
			z->pend -= b - a;
		} else {
			CHECK(z, *nkeep < MAXL, "model list full");
			keep[(*nkeep)++] = part;
		}
		a = b;
	}
}

void m_observe(struct fz *z)
{
	static struct mrange keep[MAXL];
	size_t nkeep = 0, order[MAXL];
	unsigned left[NP];
	struct purge_stats st;

	if (!z->observe)
		return;
	z->observe = false;
	settled_copies(z, left);
	for (size_t k = 0; k < z->n; k++) { /* oldest first */
		size_t j = k;
		for (; j > 0 && older(&z->l[k], &z->l[order[j - 1]]); j--)
			order[j] = order[j - 1];
		order[j] = k;
	}
	for (size_t k = 0; k < z->n; k++)
		observe_range(z, order[k], left, keep, &nkeep);
	for (size_t i = 0; i < NP; i++) {
		if (left[i])
			dump(z);
		CHECK(z, left[i] == 0, "page %zu settled %u more times than it was pending", i,
		      left[i]);
	}
	memcpy(z->l, keep, nkeep * sizeof(keep[0]));
	z->n = nkeep;
	purge_get_stats(z->q, &st);
	z->flushes = st.flushes; /* the plan decides how many it makes */
}

/* ---- PURGE_HUGE: what the contract says of a holding flush -------------- */

static uint64_t bytes_older(const struct fz *z, uint64_t age)
{
	uint64_t b = 0;

	for (size_t k = 0; k < z->n && z->now >= age; k++)
		b += z->l[k].stamp <= z->now - age ? z->l[k].e - z->l[k].s : 0;
	return b;
}

/* After an enqueue, whatever flushed: no threshold is crossed any more,
 * what PURGE_HUGE holds not counting (a threshold an automatic flush
 * leaves crossed makes every later enqueue flush). */
static void check_thresholds(struct fz *z, const struct purge_stats *st)
{
	const struct purge_config *g = &z->cfg;
	unsigned cap = g->capacity ? g->capacity : PURGE_DEFAULT_CAPACITY;

	CHECK(z, st->pending_ranges - st->held_ranges < cap,
	      "after an enqueue %llu ranges pending, %llu held, capacity %u",
	      (unsigned long long)st->pending_ranges, (unsigned long long)st->held_ranges, cap);
	CHECK(z,
	      !g->max_pending_bytes || st->pending_bytes - st->held_bytes <= g->max_pending_bytes,
	      "after an enqueue %llu bytes pending, %llu held, max_pending_bytes %zu",
	      (unsigned long long)st->pending_bytes, (unsigned long long)st->held_bytes,
	      g->max_pending_bytes);
	CHECK(z, !g->max_delay_ns || bytes_older(z, g->max_delay_ns) == 0,
	      "after an enqueue a range older than max_delay_ns is pending");
}

/* purge_flush_due: what is age_ns old is held or gone, what is past its
 * hold too is gone, and the deadline is the next thing due. */
static void check_due(struct fz *z, const struct purge_stats *st)
{
	uint64_t age = z->last.arg, next = z->last.next, delay = z->cfg.max_delay_ns;
	uint64_t oldest = m_oldest(z);

	CHECK(z, bytes_older(z, age) <= st->held_bytes,
	      "purge_flush_due left %llu bytes %llu ns old, %llu held",
	      (unsigned long long)bytes_older(z, age), (unsigned long long)age,
	      (unsigned long long)st->held_bytes);
	CHECK(z, !delay || bytes_older(z, delay > age ? delay : age) == 0,
	      "purge_flush_due held a range past max_delay_ns");
	if (!next)
		return;
	if (z->n == 0 || (st->held_ranges == z->n && !delay)) {
		CHECK(z, next == UINT64_MAX, "deadline %llu with nothing to come due",
		      (unsigned long long)next);
		return;
	}
	CHECK(z, next > z->now && next >= oldest + age, "deadline %llu, now %llu, oldest %llu",
	      (unsigned long long)next, (unsigned long long)z->now, (unsigned long long)oldest);
	CHECK(z, st->held_ranges || next == oldest + age,
	      "deadline %llu, nothing held: the oldest's age is %llu", (unsigned long long)next,
	      (unsigned long long)(oldest + age));
}

static bool page_pending(const struct fz *z, size_t i)
{
	uintptr_t a = fz_pa(z, i);

	for (size_t k = 0; k < z->n; k++)
		if (z->l[k].s <= a && a < z->l[k].e)
			return true;
	return false;
}

/* Pending ranges that meet frame f, and those enqueued over others. */
static size_t frame_ranges(const struct fz *z, size_t f, size_t *flagged)
{
	uintptr_t a = fz_pa(z, z->frame0 + f * z->fpages), b = a + z->fpages * z->page;
	size_t n = 0;

	*flagged = 0;
	for (size_t k = 0; k < z->n; k++) {
		n += z->l[k].s < b && a < z->l[k].e;
		*flagged += z->l[k].flag;
	}
	return n;
}

/* Can a round of the frame plan take any frame whole, at once?  A round
 * selects into 3/8 of the pool (frames.c): a frame of more ranges (and
 * overlapping ones, which may each need two entries) waits, and a round
 * that can take nothing takes the oldest instead. */
static bool frames_fit(const struct fz *z)
{
	size_t S = pool(z) + 1, K = S / 8 ? S / 8 : 1, cap = S - 5 * K, flagged;

	if (S - 5 * K > S || z->cfg.capacity < 64)
		return false;
	for (size_t f = 0; f < z->nframes; f++)
		if (frame_ranges(z, f, &flagged) + 2 * flagged + 8 > cap ||
		    pool(z) - z->n < flagged + 1)
			return false;
	return true;
}

/* A frame wholly pending after an automatic flush that looked at
 * everything (not PURGE_INCREMENTAL) was not seen as whole. */
static void check_no_whole_frame(struct fz *z)
{
	for (size_t f = 0; f < z->nframes; f++) {
		size_t i = z->frame0 + f * z->fpages, j = i;
		while (j < i + z->fpages && page_pending(z, j))
			j++;
		CHECK(z, j < i + z->fpages,
		      "frame %zu (pages %zu+%zu) wholly pending after an automatic flush", f, i,
		      z->fpages);
	}
}

/* Which frames inside the region huge pages back now: the fake kernel's
 * flags, or PAGEMAP_SCAN; false when the kernel cannot tell. */
static bool huge_now(struct fz *z, bool *huge)
{
	if (z->o->real_kernel)
		return z->o->thp && fz_huge_frames(z, huge);
	for (size_t f = 0; f < z->nframes; f++)
		huge[f] = fake_is_huge(&z->fk, fz_pa(z, z->frame0 + f * z->fpages));
	return true;
}

/* No huge page split that waiting could free whole: a frame huge before
 * that is not now, and was not purged whole, where no page the kernel
 * refuses (which keeps a frame from going whole) lies. */
static void check_no_split(struct fz *z)
{
	bool now[FZ_FRAMES];
	unsigned settled[NP];

	if (!huge_now(z, now))
		return;
	settled_copies(z, settled); /* a call that failed may have purged some */
	for (size_t f = 0; f < z->nframes; f++) {
		size_t i = z->frame0 + f * z->fpages, whole = 0, bad = 0;
		for (size_t j = i; j < i + z->fpages; j++) {
			whole += settled[j] > 0;
			bad += bad_page(z, j);
		}
		CHECK(z, !z->last.huge[f] || now[f] || whole == z->fpages || bad,
		      "a holding flush split the huge page of frame %zu (%zu of %zu pages purged)",
		      f, whole, z->fpages);
	}
}

/* What the contract says of the operation just observed. */
void m_contract(struct fz *z)
{
	struct purge_stats st;
	int kind = z->last.kind;

	z->last.kind = FZ_OTHER;
	purge_get_stats(z->q, &st);
	CHECK(z, st.held_ranges <= st.pending_ranges && st.held_bytes <= st.pending_bytes,
	      "more held than pending");
	if (kind == FZ_ENQ)
		check_thresholds(z, &st);
	if (!huge(z) || kind == FZ_OTHER)
		return;
	if (kind == FZ_TO)
		CHECK(z, st.pending_bytes - st.held_bytes <= z->last.arg,
		      "purge_flush_to(%llu) left %llu bytes pending, %llu held",
		      (unsigned long long)z->last.arg, (unsigned long long)st.pending_bytes,
		      (unsigned long long)st.held_bytes);
	if (kind == FZ_DUE) {
		check_due(z, &st);
		z->src->due_checks++;
	}
	for (size_t k = 0; k < z->n; k++)
		if (z->l[k].flag) {
			z->src->overlapped++;
			break;
		}
	bool plan = kind != FZ_ENQ || st.auto_flushes > z->last.auto_flushes + z->last.room;
	bool fits = frames_fit(z) && call_cap(z) >= z->fpages * z->page;
	if (kind == FZ_ENQ && plan && fits && z->nframes && !(z->cfg.flags & PURGE_INCREMENTAL)) {
		check_no_whole_frame(z);
		z->src->whole_checks++;
	}
	if (plan && fits && z->nframes && !z->cfg.max_delay_ns &&
	    !(kind == FZ_ENQ && z->last.room)) {
		check_no_split(z);
		z->src->split_checks++;
		for (size_t f = 0; f < z->nframes; f++)
			if (z->last.huge[f]) {
				z->src->huge_seen++;
				break;
			}
	}
}
