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

#include "internal.h"

struct out {
	char *buf;
	size_t len, at; /* at: bytes the whole text needs so far */
};

#define U64(f)                                                                                     \
	{                                                                                          \
#f, offsetof(struct purge_stats, f)                                                \
	}

static const struct {
	const char *name;
	size_t off;
} counters[] = {
    U64(enqueued_ranges), U64(enqueued_bytes), U64(merged_ranges), U64(cancelled_bytes),
    U64(flushes),         U64(auto_flushes),   U64(pmadv_calls),   U64(madv_calls),
    U64(short_counts),    U64(fallbacks),      U64(purged_bytes),  U64(failed_ranges),
    U64(failed_bytes),    U64(pending_ranges), U64(pending_bytes), U64(flush_ns),
    U64(flush_max_ns),    U64(call_max_ns),    U64(call_iovecs),
};

static const char *const bucket_names[PURGE_STATS_IOV_BUCKETS] = {
    "1", "2-7", "8-63", "64-255", "256-1023", "1024",
};

static void put(struct out *o, const char *s)
{
	for (; *s; s++, o->at++)
		if (o->at + 1 < o->len)
			o->buf[o->at] = *s;
}

static void put_u64(struct out *o, uint64_t v)
{
	char d[24];
	size_t n = sizeof(d) - 1;

	d[n] = '\0';
	do
		d[--n] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	put(o, &d[n]);
}

static const char *advice_name(int advice)
{
	switch (advice) {
	case MADV_DONTNEED:
		return "dontneed";
	case MADV_DONTNEED_LOCKED:
		return "dontneed_locked";
	case MADV_FREE:
		return "free";
	case MADV_COLD:
		return "cold";
	case MADV_PAGEOUT:
		return "pageout";
	default:
		return "none";
	}
}

static const char *backend_name(int backend)
{
	return backend == PURGE_BACKEND_VECTORED ? "vectored"
	       : backend == PURGE_BACKEND_LOOP   ? "loop"
	                                         : "none";
}

/* One field: `name value` on a line, or `"name":value` in JSON. */
static void field(struct out *o, bool json, const char *name, const char *value, bool quote)
{
	put(o, json ? (o->at > 1 ? ",\"" : "\"") : "");
	put(o, name);
	put(o, json ? "\":" : " ");
	put(o, json && quote ? "\"" : "");
	put(o, value);
	put(o, json && quote ? "\"" : json ? "" : "\n");
}

static void field_u64(struct out *o, bool json, const char *name, uint64_t v)
{
	char d[24];
	struct out t = {d, sizeof(d), 0};

	put_u64(&t, v);
	d[t.at] = '\0';
	field(o, json, name, d, false);
}

static void buckets(struct out *o, bool json, const struct purge_stats *st)
{
	put(o, json ? ",\"calls_by_iovecs\":{" : "calls_by_iovecs");
	for (unsigned b = 0; b < PURGE_STATS_IOV_BUCKETS; b++) {
		put(o, json ? (b ? ",\"" : "\"") : " ");
		put(o, bucket_names[b]);
		put(o, json ? "\":" : ":");
		put_u64(o, st->calls_by_iovecs[b]);
	}
	put(o, json ? "}" : "\n");
}

int purge_stats_format(const struct purge_stats *st, char *buf, size_t len, unsigned flags)
{
	struct out o = {buf, len, 0};
	bool json = flags & PURGE_FORMAT_JSON;

	if (!st || (!buf && len) || (flags & ~PURGE_FORMAT_JSON))
		return -EINVAL;
	put(&o, json ? "{" : "");
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		field_u64(&o, json, counters[i].name,
		          *(const uint64_t *)((const char *)st + counters[i].off));
	buckets(&o, json, st);
	field(&o, json, "advice", advice_name(st->advice), true);
	field(&o, json, "backend", backend_name(st->backend), true);
	field(&o, json, "zeroed", st->zeroed ? (json ? "true" : "1") : (json ? "false" : "0"),
	      false);
	field_u64(&o, json, "env_ignored", st->env_ignored);
	put(&o, json ? "}\n" : "");
	if (len)
		buf[o.at < len ? o.at : len - 1] = '\0';
	return o.at > INT_MAX ? INT_MAX : (int)o.at;
}
