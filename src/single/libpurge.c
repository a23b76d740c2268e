/* SPDX-License-Identifier: MIT */
/*
 * libpurge in one translation unit, for vendors who want a single file:
 *   cc -std=c11 -O2 -fPIC -Iinclude -c src/single/libpurge.c
 * It includes every source of src/; every static name carries its
 * file's word, so they do not collide.  .ci/check-single.sh builds it and
 * checks that it includes every C file of src/.
 */
#include "../advice.c"
#include "../api.c"
#include "../books.c"
#include "../config.c"
#include "../drain.c"
#include "../flight.c"
#include "../flush.c"
#include "../frames.c"
#include "../fmt.c"
#include "../index.c"
#include "../pressure.c"
#include "../setup.c"
#include "../sort.c"
#include "../store.c"
#include "../sys.c"
