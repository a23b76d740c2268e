#!/bin/sh
# SPDX-License-Identifier: MIT
#
# test-linked.sh JE_LINKED: the patched jemalloc (5.3.1, jemalloc's soname
# libjemalloc.so.2) preloads in front of a program linked against the
# system's jemalloc (Debian's 5.3.0, as redis-server is): without the
# preload the program is served by the system's (no opt.libpurge), with it
# by the patched one (opt.libpurge, version 5.3.1), and memory goes back
# to the copy it came from.  JE_LINKED is je-linked.c built with
# -ljemalloc.
# Exit 0 pass, 77 skip (no patched build), 1 fail.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
linked=$1
# shellcheck source=find-libs.sh
. "$here/find-libs.sh"
fails=0
out=$("$linked" 2>&1)
case $out in
"version "*" libpurge no") echo "ok: without the preload: $out" ;;
*) echo "FAIL: without the preload, expected the system's jemalloc: $out"; fails=$((fails + 1)) ;;
esac
out=$(LD_PRELOAD=$lib "$linked" --want-libpurge 2>&1)
case $out in
"version 5.3.1"*" libpurge yes") echo "ok: with $lib preloaded: $out" ;;
*) echo "FAIL: with $lib preloaded: $out"; fails=$((fails + 1)) ;;
esac
echo "$((2 - fails))/2 passed"
[ $fails -eq 0 ]
