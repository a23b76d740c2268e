/* SPDX-License-Identifier: MIT */
/*
 * First include of every library source: the sources build as they are
 * under -std=c11 (or gnu11) in any build system that vendors them.
 * process_madvise, MADV_* and MAP_ANONYMOUS are GNU/Linux extensions.
 */
#ifndef PURGE_COMPAT_H
#define PURGE_COMPAT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#endif
