/* SPDX-License-Identifier: MIT */
/*
 * purge_stats_format(): the counters as text or JSON, in the spirit of
 * malloc_stats_print() and mi_stats_print().  Writes into the caller's
 * buffer with its own digit conversion: no stdio, no allocation, so it can
 * run at exit, in a signal handler or inside an allocator.
 */
#include "compat.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>

#include "advice.h"
#include "purge.h"

struct fmt_out {
	char *buf;
	size_t len, at; /* at: bytes the whole text needs so far */
};

#define FMT_U64(f)                                                                                 \
	{                                                                                          \
#f, offsetof(struct purge_stats, f)                                                \
	}

static const struct {
	const char *name;
	size_t off;
} fmt_counters[] = {
    FMT_U64(enqueued_ranges), FMT_U64(enqueued_bytes), FMT_U64(merged_ranges),
    FMT_U64(cancelled_bytes), FMT_U64(flushes),        FMT_U64(auto_flushes),
    FMT_U64(pmadv_calls),     FMT_U64(madv_calls),     FMT_U64(short_counts),
    FMT_U64(fallbacks),       FMT_U64(purged_bytes),   FMT_U64(failed_ranges),
    FMT_U64(failed_bytes),    FMT_U64(pending_ranges), FMT_U64(pending_bytes),
    FMT_U64(flush_ns),        FMT_U64(flush_max_ns),   FMT_U64(call_max_ns),
    FMT_U64(call_iovecs),
};

/* The fields after env_ignored, in the struct's order (PURGE_HUGE, 2.1). */
static const struct {
	const char *name;
	size_t off;
} fmt_frames[] = {
    FMT_U64(frames_whole),
    FMT_U64(frames_split),
    FMT_U64(held_ranges),
    FMT_U64(held_bytes),
};

static const char *const fmt_bucket_names[PURGE_STATS_IOV_BUCKETS] = {
    "1", "2-7", "8-63", "64-255", "256-1023", "1024",
};

static void fmt_put(struct fmt_out *o, const char *s)
{
	for (; *s; s++, o->at++)
		if (o->at + 1 < o->len)
			o->buf[o->at] = *s;
}

static void fmt_put_u64(struct fmt_out *o, uint64_t v)
{
	char d[24];
	size_t n = sizeof(d) - 1;

	d[n] = '\0';
	do
		d[--n] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	fmt_put(o, &d[n]);
}

static const char *fmt_advice_name(int advice)
{
	const struct purge__advice *a = purge__advice_find(advice);

	return a ? a->name : "none";
}

static const char *fmt_backend_name(int backend)
{
	return backend == PURGE_BACKEND_VECTORED ? "vectored"
	       : backend == PURGE_BACKEND_LOOP   ? "loop"
	                                         : "none";
}

/* One field: `name value` on a line, or `"name":value` in JSON. */
static void fmt_field(struct fmt_out *o, bool json, const char *name, const char *value, bool quote)
{
	fmt_put(o, json ? (o->at > 1 ? ",\"" : "\"") : "");
	fmt_put(o, name);
	fmt_put(o, json ? "\":" : " ");
	fmt_put(o, json && quote ? "\"" : "");
	fmt_put(o, value);
	fmt_put(o, json && quote ? "\"" : json ? "" : "\n");
}

static void fmt_field_u64(struct fmt_out *o, bool json, const char *name, uint64_t v)
{
	char d[24];
	struct fmt_out t = {d, sizeof(d), 0};

	fmt_put_u64(&t, v);
	d[t.at] = '\0';
	fmt_field(o, json, name, d, false);
}

static void fmt_buckets(struct fmt_out *o, bool json, const struct purge_stats *st)
{
	fmt_put(o, json ? ",\"calls_by_iovecs\":{" : "calls_by_iovecs");
	for (unsigned b = 0; b < PURGE_STATS_IOV_BUCKETS; b++) {
		fmt_put(o, json ? (b ? ",\"" : "\"") : " ");
		fmt_put(o, fmt_bucket_names[b]);
		fmt_put(o, json ? "\":" : ":");
		fmt_put_u64(o, st->calls_by_iovecs[b]);
	}
	fmt_put(o, json ? "}" : "\n");
}

int purge_stats_format(const struct purge_stats *st, char *buf, size_t len, unsigned flags)
{
	struct fmt_out o = {buf, len, 0};
	bool json = flags & PURGE_FORMAT_JSON;

	if (!st || (!buf && len) || (flags & ~PURGE_FORMAT_JSON))
		return -EINVAL;
	fmt_put(&o, json ? "{" : "");
	for (size_t i = 0; i < sizeof(fmt_counters) / sizeof(fmt_counters[0]); i++)
		fmt_field_u64(&o, json, fmt_counters[i].name,
		              *(const uint64_t *)((const char *)st + fmt_counters[i].off));
	fmt_buckets(&o, json, st);
	fmt_field(&o, json, "advice", fmt_advice_name(st->advice), true);
	fmt_field(&o, json, "backend", fmt_backend_name(st->backend), true);
	fmt_field(&o, json, "zeroed", st->zeroed ? (json ? "true" : "1") : (json ? "false" : "0"),
	          false);
	fmt_field_u64(&o, json, "env_ignored", st->env_ignored);
	for (size_t i = 0; i < sizeof(fmt_frames) / sizeof(fmt_frames[0]); i++) /* 2.1 */
		fmt_field_u64(&o, json, fmt_frames[i].name,
		              *(const uint64_t *)((const char *)st + fmt_frames[i].off));
	fmt_put(&o, json ? "}\n" : "");
	if (len)
		buf[o.at < len ? o.at : len - 1] = '\0';
	return o.at > INT_MAX ? INT_MAX : (int)o.at;
}
