#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-mimalloc.sh [BUILD]: mimalloc 3.4.3 with the batched purge series
# against stock 3.4.3: mimalloc's CTest suite in both and our own checks
# (integrations/mimalloc/tests/check-v3.sh, from a clean work directory:
# idle RSS, fork without handlers, options set in main, knob warnings,
# calloc and canaries, reuse, strace against the counters, the fallback,
# Bun's case).  BUILD is the integrations' meson build
# (integrations-build/meson, set up when missing), whose programs the
# checks run.  Skipped where ../shared/sources/mimalloc-3.4.3.tar.xz or
# cmake is missing.  (The mimalloc 2.0.9 series through libpurge is
# retired; its tests have v3 counterparts in check-v3.sh.)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-integrations-build/meson}
[ -f "$build/build.ninja" ] || meson setup "$build" integrations >/dev/null
rm -rf "$build/mimalloc/work-v3"
rc=0
integrations/mimalloc/tests/check-v3.sh -w "$build/mimalloc/work-v3" -b "$build" || rc=$?
if [ $rc = 77 ]; then
	echo "SKIP: mimalloc 3.4.3 checks (no source or tool; see above)"
elif [ $rc != 0 ]; then
	exit $rc
fi
