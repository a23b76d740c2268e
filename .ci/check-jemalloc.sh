#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-jemalloc.sh [BUILD]: jemalloc's own purging through libpurge
# (integrations/jemalloc): build jemalloc 5.3.1 with the patch series
# (patches/5.3.1) from ../shared/sources/jemalloc-5.3.1.tar.xz, and
# unpatched (--stock: what the comparisons compare with), run jemalloc's
# `make check` once with its defaults and a chosen subset of it under the
# MALLOC_CONF variants (tests/make-check.sh --quick), the same in a
# --enable-debug build of the series, then the tests of the reuse path (je-reuse), of preloading in
# front of a program linked against Debian's 5.3.0 (je-linked), of lifetime,
# fork, CPython and huge pages (the tests the retired preload shim had).
# BUILD is the integrations' meson build (integrations-build/meson, set up
# when missing).  The patched jemalloc goes where build.sh puts it by
# default (integrations-build/jemalloc), where the tests look for it.
# No source (no ../shared/sources/jemalloc-5.3.1.tar.xz) or a tool missing:
# the stage says so, with build.sh's reason above it, and skips.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-integrations-build/meson}
[ -f "$build/build.ninja" ] || meson setup "$build" integrations >/dev/null
t0=$SECONDS
rc=0
lib=$(nice integrations/jemalloc/build.sh --jobs 2) || rc=$?
if [ $rc -eq 77 ]; then
	echo "check-jemalloc: skipped: jemalloc cannot be built here (build.sh's reason is above)"
	exit 0
fi
[ $rc -eq 0 ] || exit $rc
# the same jemalloc unpatched: what the lifetime, CPython and THP tests
# compare with (tests/find-libs.sh finds it beside the patched one)
nice integrations/jemalloc/build.sh --jobs 2 --stock >/dev/null
echo "check-jemalloc: built $lib and stock in $((SECONDS - t0))s"
ninja -C "$build" jemalloc/je-reuse jemalloc/je-fds >/dev/null
integrations/jemalloc/tests/make-check.sh --quick
echo "check-jemalloc: make check done at $((SECONDS - t0))s"
integrations/jemalloc/tests/test-jemalloc.sh "$build/jemalloc/je-reuse" "$lib"
echo "check-jemalloc: reuse tests done at $((SECONDS - t0))s"
# the series under --enable-debug (assertions, junk filling, the witness
# lock-order checker): jemalloc's make check, then the quick unit tests at
# decay 0 with one range a call (build.sh's default options, plus the flag)
dbg=integrations-build/jemalloc-debug
nice integrations/jemalloc/build.sh --jobs 2 -o "$dbg" -- --with-lg-page=12 \
	--with-lg-hugepage=21 --enable-prof --with-experimental-sys-process-madvise=440 \
	--enable-debug >/dev/null
integrations/jemalloc/tests/make-check.sh --quick --tree "$dbg/jemalloc" \
	dirty_decay_ms:0,process_madvise_max_batch:1
echo "check-jemalloc: --enable-debug make check done at $((SECONDS - t0))s"
# it preloads in front of a program linked against Debian's jemalloc 5.3.0
# (je-linked is built where libjemalloc-dev is installed, as CI does)
if ninja -C "$build" jemalloc/je-linked >/dev/null 2>&1; then
	JEMALLOC_PATCHED=$lib integrations/jemalloc/tests/test-linked.sh "$build/jemalloc/je-linked"
else
	echo "check-jemalloc: test-linked skipped: no je-linked (libjemalloc-dev not installed)"
fi
# issue 35: the program's descriptors after closefrom(3), dup2, a fork child
integrations/jemalloc/tests/test-fds.sh -n 5 -m "closefrom closeloop dup2 fork" \
	-b "$build/jemalloc/je-fds" "patched=$lib"
# what the retired preload shim proved, of the patched jemalloc: lifetime,
# fork, CPython's test_threading, huge pages (77: skipped, reason printed)
w=$build/workloads
ninja -C "$build" workloads/lifetime workloads/fork-storm workloads/ebizzy-lite >/dev/null
for t in "test-lifetime.sh $w/lifetime" "test-fork.sh $w/fork-storm" "test-cpython.sh" \
	"test-thp-rss.sh $w/ebizzy-lite"; do
	rc=0
	# shellcheck disable=SC2086 # a script and its argument
	JEMALLOC_PATCHED=$lib integrations/jemalloc/tests/$t || rc=$?
	case $rc in
	0) ;;
	77) echo "check-jemalloc: ${t%% *} skipped (reason above)" ;;
	*) exit "$rc" ;;
	esac
done
echo "check-jemalloc: done in $((SECONDS - t0))s"
