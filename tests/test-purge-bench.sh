#!/bin/sh
# SPDX-License-Identifier: MIT
# purge-bench end to end, in under a second: bad output paths are refused
# before the run; --csv --out writes a CSV whose first line is the header,
# a JSON sidecar with a schema version and the table on stdout; --csv alone
# keeps stdout plain CSV; --layout frames with THP advised runs and fills
# in the memory columns.  The timings and amounts are never looked at.
set -eu
bench=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "test-purge-bench: $*" >&2; exit 1; }
quick() { "$bench" --size 1M --repeat 1 --batch 1,4 "$@"; }

# exit status 2 and nothing on stdout: refused up front, not after the run
for opt in --out --plot; do
	rc=0
	quick --csv "$opt" "$dir/no/such/file.svg" >"$dir/out" 2>"$dir/err" || rc=$?
	if [ "$rc" -ne 2 ] || [ -s "$dir/out" ]; then
		fail "a bad $opt path was not refused before the run"
	fi
	grep -qF -- "$opt $dir/no/such/file.svg" "$dir/err" || fail "no message names the $opt path"
done

quick --suggest --csv --out "$dir/r.csv" >"$dir/table"
header=row,vlen,median_ns,p10_ns,p90_ns,spread,ns_per_page,vs_loop,vs_floor,syscalls,refault_ns
header=$header,thp_split_half,thp_split_end,purged_half,mem_drop_half,left_half,mem_drop_end
header=$header,anon_huge_before,anon_huge_after,frames_whole,frames_split,held_half,skipped
[ "$(head -1 "$dir/r.csv")" = "$header" ] || fail "the CSV does not start with its header"
[ "$(wc -l <"$dir/r.csv")" -eq 11 ] || fail "the CSV should hold the header and 10 rows"
grep -q '^# purge-bench' "$dir/table" || fail "no table on stdout"
grep -q '^suggest: .*(runs picked [0-9]*, [0-9]' "$dir/table" ||
	fail "--suggest did not rerun until two runs agree"
grep -q '"schema_version": 3' "$dir/r.json" || fail "no JSON sidecar with a schema version"
if command -v python3 >/dev/null; then
	python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$dir/r.json" ||
		fail "the JSON sidecar does not parse"
fi

quick --csv >"$dir/stdout.csv" 2>/dev/null
[ "$(head -1 "$dir/stdout.csv")" = "$header" ] || fail "--csv: stdout is not plain CSV"

# whole huge page frames, THP advised, automatic flushes: runs, same rows,
# and the memory columns are filled in (what they hold depends on the machine)
quick --layout frames --size 4M --thp madvise --csv --out "$dir/frames.csv" >"$dir/frames.table" \
	2>&1 || fail "--layout frames --thp madvise failed: $(tail -n 1 "$dir/frames.table")"
[ "$(wc -l <"$dir/frames.csv")" -eq 11 ] || fail "--layout frames: not the header and 10 rows"
# purge-huge runs, or says why not: never an empty row without a reason
grep -Eq '^purge-huge,4,([0-9]|.*,the library lacks PURGE_HUGE$)' "$dir/frames.csv" ||
	fail "purge-huge neither measured nor skipped with its reason"
grep -q '^# frames: 2 of 2M, 2 freed at a time' "$dir/frames.table" ||
	fail "--layout frames: no frames line in the table's header"
grep -q '^memory per pass, median of 1' "$dir/frames.table" || fail "--thp madvise: no memory table"
# columns 12 (thp_split_half) to 19 (anon_huge_after) of madvise-loop
awk -F, '$1 == "madvise-loop" { for (i = 12; i <= 19; i++) if ($i == "") exit 1; ok = 1 }
	END { exit !ok }' "$dir/frames.csv" || fail "--thp madvise: memory columns left empty"
# frames_whole (column 20) comes from a PURGE_HUGE queue only: empty for
# purge-default, filled for purge-huge where it ran (skipped: column 23)
awk -F, '$1 == "purge-default" && $20 != "" { exit 1 }
	$1 == "purge-huge" && $23 == "" && $20 == "" { exit 1 }' "$dir/frames.csv" ||
	fail "frame counters shown for a queue without PURGE_HUGE, or missing for purge-huge"
grep -q '"memory": {"measured": true' "$dir/frames.json" || fail "no memory object in the JSON"
if command -v python3 >/dev/null; then
	python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$dir/frames.json" ||
		fail "the JSON with memory columns does not parse"
fi
echo "test-purge-bench: ok"
