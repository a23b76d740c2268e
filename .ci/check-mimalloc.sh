#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-mimalloc.sh [BUILD]: mimalloc 2.0.9 (Debian's source) patched to
# purge through libpurge, against the same source unpatched: build both
# (release, and MI_ASAN), run mimalloc's own tests under the options at
# their defaults and extremes, and our reuse/canary/fork tests
# (integrations/mimalloc/tests/test-mimalloc.sh, through meson).  BUILD is
# the integrations' meson build (integrations-build/meson, set up when
# missing).  The tests skip (77) when Debian's archive cannot be reached.
# Then mimalloc 3.4.3 with the batched purge series against stock 3.4.3:
# mimalloc's CTest suite in both and our own checks
# (integrations/mimalloc/tests/check-v3.sh, from a clean work directory);
# skipped where ../shared/sources/mimalloc-3.4.3.tar.xz is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-integrations-build/meson}
[ -f "$build/build.ninja" ] || meson setup "$build" integrations >/dev/null
ninja -C "$build" mimalloc/mimalloc-reuse workloads/ebizzy-lite \
	workloads/fork-storm mimalloc/mimalloc-idle \
	mimalloc/mimalloc-forkhang >/dev/null
rm -rf "$build/mimalloc/work" # a clean build, as CI's first
MIMALLOC_TESTS=1 meson test -C "$build" --print-errorlogs mimalloc-upstream mimalloc-asan mimalloc-own
for f in "$build"/mimalloc/work/results-*.txt; do
	[ -f "$f" ] && { echo "== $f"; cat "$f"; }
done

# mimalloc v3 (3.4.3): the batched purge series
rm -rf "$build/mimalloc/work-v3"
rc=0
integrations/mimalloc/tests/check-v3.sh -w "$build/mimalloc/work-v3" -b "$build" || rc=$?
if [ $rc = 77 ]; then
	echo "SKIP: mimalloc 3.4.3 checks (no source or tool; see above)"
elif [ $rc != 0 ]; then
	exit $rc
fi
