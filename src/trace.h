/* SPDX-License-Identifier: MIT */
/*
 * USDT probes (provider "libpurge"), for bpftrace, perf and SystemTap:
 * docs/tracing.md lists them with their arguments.  Built in when the
 * build found <sys/sdt.h> (systemtap-sdt-dev; meson option sdt); each is
 * a nop instruction and an ELF note until a tracer attaches, and nothing
 * at all in a build without the header.
 */
#ifndef PURGE_TRACE_H
#define PURGE_TRACE_H

#ifdef PURGE_HAVE_SDT
#include <sys/sdt.h>
#define PURGE_TRACE3(name, a, b, c)       STAP_PROBE3(libpurge, name, a, b, c)
#define PURGE_TRACE4(name, a, b, c, d)    STAP_PROBE4(libpurge, name, a, b, c, d)
#define PURGE_TRACE5(name, a, b, c, d, e) STAP_PROBE5(libpurge, name, a, b, c, d, e)
#else
#define PURGE_TRACE3(name, a, b, c)       ((void)0)
#define PURGE_TRACE4(name, a, b, c, d)    ((void)0)
#define PURGE_TRACE5(name, a, b, c, d, e) ((void)0)
#endif

#endif
