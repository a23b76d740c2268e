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
# Usage: .ci/check-no-global-counters.sh [--root DIR] [BUILD]
# Looks at the tests, the examples that run as tests, the integrations'
# tests and patches, and the CI checks of DIR (default: this checkout).
# Comment lines are left out; a line that must name such a file without
# reading it (a label a test expects a benchmark to print) carries
# "global-counter-ok" and a reason, on it or on the line before.
# With BUILD, then runs BUILD's kernel suite beside BUILD's
# tests/thp-neighbour, which splits huge pages in a loop (a few seconds).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = --root ]; then
	root=$(cd "$2" && pwd)
	shift 2
fi
build=${1:+$(cd "$1" && pwd)}
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
for f in integrations/*/test-* .ci/check-*.sh .ci/run .ci/mutants; do
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

[ -n "$build" ] || exit 0
kernel=$build/tests/test_kernel thp=$build/tests/test_kernel_thp neighbour=$build/tests/thp-neighbour
if [ ! -x "$kernel" ] || [ ! -x "$thp" ] || [ ! -x "$neighbour" ]; then
	echo "check-no-global-counters: no $kernel, $thp or $neighbour: the suites beside a neighbour are skipped"
	exit 0
fi
out=$(mktemp) log=$(mktemp)
trap 'rm -f "$out" "$log"' EXIT
"$neighbour" 60 >"$out" &
npid=$!
rc=0
"$kernel" --jobs=1 --verbose=0 >"$log" 2>&1 || rc=$?
"$thp" --jobs=1 --verbose=0 >>"$log" 2>&1 || rc=$?
kill "$npid" 2>/dev/null || true
wait "$npid" || true
cat "$out"
grep -E '^\[(FAIL|SKIP|====)\]|Assertion|^\[----\]   [^ ]' "$log" || true
if [ "$rc" -ne 0 ]; then
	echo "check-no-global-counters: the kernel suites failed beside a neighbour that splits huge pages" >&2
	exit 1
fi
grep -q 'turns in .*, [1-9][0-9]* of them split' "$out" ||
	echo "check-no-global-counters: the neighbour split no huge page here (THP off?): a weak check"
echo "check-no-global-counters: the kernel suites passed beside the neighbour"
