#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-mimalloc.sh [BUILD]: mimalloc 2.0.9 (Debian's source) patched to
# purge through libpurge, against the same source unpatched: build both
# (release, and MI_ASAN), run mimalloc's own tests under the options at
# their defaults and extremes, and our reuse/canary/fork tests
# (integrations/mimalloc/tests/test-mimalloc.sh, through meson).  The
# tests skip (77) when Debian's archive cannot be reached.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
ninja -C "$build" integrations/mimalloc/mimalloc-reuse integrations/workloads/ebizzy-lite \
	integrations/workloads/fork-storm integrations/mimalloc/mimalloc-idle \
	integrations/mimalloc/mimalloc-forkhang >/dev/null
rm -rf "$build/integrations/mimalloc/work" # a clean build, as CI's first
MIMALLOC_TESTS=1 meson test -C "$build" --print-errorlogs mimalloc-upstream mimalloc-asan mimalloc-own
for f in "$build"/integrations/mimalloc/work/results-*.txt; do
	[ -f "$f" ] && { echo "== $f"; cat "$f"; }
done
