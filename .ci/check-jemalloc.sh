#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-jemalloc.sh BUILD: jemalloc's own purging through libpurge
# (integrations/jemalloc): build the patched libjemalloc.so.2 from Debian's
# source package, run jemalloc's `make check` once with its defaults and a
# chosen subset of it under the MALLOC_CONF variants (tests/make-check.sh
# --quick), then the tests of the reuse path (je-reuse, from the meson build
# BUILD).  The patched jemalloc goes where build.sh puts it by default
# (integrations-build/jemalloc), where the tests look for it.  No source
# (Debian's archive unreachable) or a tool missing: the stage says so, with
# build.sh's reason above it, and skips.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
t0=$SECONDS
rc=0
lib=$(nice integrations/jemalloc/build.sh --jobs 2) || rc=$?
if [ $rc -eq 77 ]; then
	echo "check-jemalloc: skipped: jemalloc cannot be built here (build.sh's reason is above)"
	exit 0
fi
[ $rc -eq 0 ] || exit $rc
echo "check-jemalloc: built $lib in $((SECONDS - t0))s"
ninja -C "$build" integrations/jemalloc/je-reuse >/dev/null
integrations/jemalloc/tests/make-check.sh --quick
echo "check-jemalloc: make check done at $((SECONDS - t0))s"
integrations/jemalloc/tests/test-jemalloc.sh "$build/integrations/jemalloc/je-reuse" "$lib"
echo "check-jemalloc: done in $((SECONDS - t0))s"
