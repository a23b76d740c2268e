#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# No test reads a machine-wide counter (issue 30).  A shared CI machine
# runs other builds and suites beside ours: a test that decides from
# /proc/vmstat (thp_split_pmd), /proc/meminfo and the like fails whenever
# another process splits a huge page or takes memory.  Tests decide from
# their own process's state instead: /proc/self/pagemap (PAGEMAP_SCAN),
# /proc/self/smaps, their own memory cgroup.  Benchmarks may report
# machine-wide counters (and say so); their tests may not assert on them.
#
# Usage: .ci/check-no-global-counters.sh [ROOT]   (default: this checkout)
# Looks at the tests, the examples that run as tests, the integrations'
# tests and patches, and the CI checks.  Comment lines are left out; a
# line that must name such a file without reading it (a label a test
# expects a benchmark to print) carries "global-counter-ok" and a reason,
# on it or on the line before.
set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

# machine-wide state: memory and THP counters, per-node and hugetlb pool
# counts, khugepaged's, the load and the CPU counters
pattern='/proc/(vmstat|meminfo|zoneinfo|buddyinfo|pagetypeinfo|slabinfo|loadavg|interrupts)'
pattern+='|/proc/stat([^a-z_]|$)|/sys/devices/system/node|/sys/kernel/mm/hugepages/'
pattern+='|khugepaged/(pages_collapsed|full_scans|pages_to_scan)'
pattern+='|(free|resv|surplus)_hugepages'

files=()
for d in tests examples integrations/*/tests integrations/*/patches; do
	[ -d "$d" ] && while IFS= read -r -d '' f; do files+=("$f"); done \
		< <(find "$d" -type f -print0)
done
for f in tools/test-* integrations/*/test-* .ci/check-*.sh .ci/run .ci/mutants; do
	[ -f "$f" ] && [ "$f" != .ci/check-no-global-counters.sh ] && files+=("$f")
done
[ "${#files[@]}" -gt 0 ] || { echo "check-no-global-counters: no test files under $root" >&2; exit 1; }

# comment lines (C: /*, *, //; shell: "# ...", not #include or #!) are
# left out, and a line that follows or carries "global-counter-ok"
hits=$(awk -v re="$pattern" '
	FNR == 1 { prev = "" }
	$0 ~ re && $0 !~ /^[[:space:]]*(\/\*|\*|\/\/|#([^a-z!]|$))/ &&
		(prev $0) !~ /global-counter-ok/ { print FILENAME ":" FNR ": " $0 }
	{ prev = $0 }' "${files[@]}")
if [ -n "$hits" ]; then
	echo "check-no-global-counters: a test reads a machine-wide counter;" \
		"decide from the process's own state (/proc/self/pagemap, smaps, its cgroup):" >&2
	echo "$hits" >&2
	exit 1
fi
echo "check-no-global-counters: ${#files[@]} files, no machine-wide counter read"
