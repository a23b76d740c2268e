#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cpython.sh STOCK_LIB PATCHED_LIB OUTDIR [TEST...]: CPython's own test suite
# (test_threading test_list test_dict unless TESTs are named) under
# mimalloc 3.4.3 stock and patched (build.sh --stock, build.sh), preloaded,
# at MIMALLOC_PURGE_DELAY 0 (or $MIMALLOC_PURGE_DELAY when set;
# $MIMALLOC_DECOMMIT_DELAY, the name the runs of 2026-12-06 were given, is
# read when it is not): the patched run must fail nothing the stock one
# passes.  Needs a python3 with
# its test package (Debian: python3 and libpython3.11-testsuite; $PYTHON
# names one).  Writes OUTDIR/stock.log and patched.log (regrtest's own
# output), stock.res and patched.res (every test case and its outcome) and
# summary.txt (the exact commands, the machine, the verdict).
# Exit 0: the patched run fails nothing stock passes; 1: it does;
# 77: no python with its tests.
set -u
[ $# -ge 3 ] || { echo "usage: $0 STOCK_LIB PATCHED_LIB OUTDIR [TEST...]" >&2; exit 2; }
stock=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
patched=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
mkdir -p "$3" && out=$(cd "$3" && pwd)
shift 3
[ $# -gt 0 ] || set -- test_threading test_list test_dict
tests=("$@")
delay=${MIMALLOC_PURGE_DELAY:-${MIMALLOC_DECOMMIT_DELAY:-0}}
# shellcheck source=../common/cpython-lib.sh
. "$(dirname "$0")/../common/cpython-lib.sh"
cpython_find
py=$cpython_py
sum=$out/summary.txt
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "machine: nproc $(nproc), uname -r $(uname -r), load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "python: $py ($("$py" --version 2>&1))"
} >"$sum"
# the libraries serve this python: their stats at exit (the patched one's
# -batched line, once it purged a batch)
for l in "$stock" "$patched"; do
	echo "check: MIMALLOC_SHOW_STATS=1 LD_PRELOAD=$l $py -c 'bytearray(64 << 20)': $(env MIMALLOC_SHOW_STATS=1 \
		MIMALLOC_PURGE_DELAY="$delay" LD_PRELOAD="$l" "$py" -c 'bytearray(64 << 20)' 2>&1 |
		grep -aE '^ *(purges|-batched|-calls|-vectored|heap stats|committed)' | tr -s ' ' | tr '\n' ';')" >>"$sum"
done
# run NAME LIB: regrtest, verbose, two workers; its status in $rc and the
# outcome of every test case in NAME.res
run() {
	local t0 t1
	t0=$(date +%s)
	cpython_run "$out" "$1" 1800 LD_PRELOAD="$2" MIMALLOC_PURGE_DELAY="$delay" -- \
		-j2 -v --timeout 600 "${tests[@]}"
	rc=$cpython_rc
	t1=$(date +%s)
	{
		echo "== $1: LD_PRELOAD=$2 MIMALLOC_PURGE_DELAY=$delay $py -m test -j2 -v --timeout 600 ${tests[*]}"
		echo "   status $rc, $((t1 - t0)) s wall, load average after $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "   cases: $(grep -c ' ok$' "$out/$1.res") ok, $(grep -c ' skipped$' "$out/$1.res") skipped," \
			"$(grep -Ec ' (FAIL|ERROR)$' "$out/$1.res") FAIL or ERROR, $(grep -c . "$out/$1.res") in all"
		grep -E '^(== Tests result|Tests result|[0-9]+ tests? (OK|failed|skipped)|All [0-9]+ tests OK)' "$out/$1.log" |
			sed 's/^/   /'
	} >>"$sum"
}
run stock "$stock"
rs=$rc
run patched "$patched"
rp=$rc
# every case that passed under stock and did not pass (or did not run) patched
worse=$(join -a1 -e MISSING -o 0,1.2,2.2 <(awk '{print $1, $NF}' "$out/stock.res") \
	<(awk '{print $1, $NF}' "$out/patched.res") | awk '$2 == "ok" && $3 != "ok"')
if [ -n "$worse" ] || { [ "$rs" = 0 ] && [ "$rp" != 0 ]; }; then
	{
		echo "FAIL: under the patched library (status $rp, stock $rs):"
		echo "$worse"
	} | tee -a "$sum"
	exit 1
fi
echo "PASS: the patched run fails nothing the stock run passes (status stock $rs, patched $rp)" | tee -a "$sum"
exit 0
