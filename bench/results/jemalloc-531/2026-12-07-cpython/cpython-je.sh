#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cpython-je.sh STOCK_LIB PATCHED_LIB OUTDIR ROUNDS [TEST...]: CPython's own
# regression tests (the nine modules of integrations/mimalloc/cpython.sh's
# runs of 2026-12-06 unless TESTs are named) under jemalloc 5.3.1 stock and
# patched (build.sh --stock, build.sh), preloaded, at MALLOC_CONF
# dirty_decay_ms:0 and at jemalloc's defaults (no MALLOC_CONF).  The same
# regrtest call as cpython.sh (-j2 -v --timeout 600, through
# integrations/common/cpython-lib.sh), the order of the two builds flipped
# every round and every setting; each run under perf stat (task-clock,
# madvise + process_madvise of the whole process tree).  Writes
# OUTDIR/NAME.log and NAME.res per run (NAME = build.setting.round),
# OUTDIR/runs.tsv and OUTDIR/summary.txt (commands, load, the verdict).
# Exit 0: no patched run fails a case that the stock run of the same
# setting and round passes; 1: one does; 77: no python with its tests.
set -u
[ $# -ge 4 ] || { echo "usage: $0 STOCK_LIB PATCHED_LIB OUTDIR ROUNDS [TEST...]" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/../../../.." && pwd)
declare -A lib=([stock]=$(readlink -f "$1") [patched]=$(readlink -f "$2"))
mkdir -p "$3" && out=$(cd "$3" && pwd)
rounds=$4
shift 4
[ $# -gt 0 ] || set -- test_threading test_list test_dict test_set test_gc test_fork1 test_subprocess test_mmap test_bytes
tests=("$@")
# shellcheck source=../../../../integrations/common/cpython-lib.sh
. "$repo/integrations/common/cpython-lib.sh"
cpython_find
py=$cpython_py
declare -A conf=([d0]=dirty_decay_ms:0 [default]="")
sum=$out/summary.txt
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "machine: nproc $(nproc), uname -r $(uname -r), load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "python: $py ($("$py" --version 2>&1))"
	echo "tests: ${tests[*]}"
} >"$sum"
# each library serves this python: its version and opt.libpurge (the
# stock one has no such option: mallctl answers ENOENT, 2)
for b in stock patched; do
	echo "check $b: LD_PRELOAD=${lib[$b]}: $(env LD_PRELOAD="${lib[$b]}" "$py" -c '
import ctypes
f = ctypes.CDLL(None).mallctl
s = ctypes.c_char_p(); n = ctypes.c_size_t(ctypes.sizeof(s))
f(b"version", ctypes.byref(s), ctypes.byref(n), None, 0)
v = ctypes.c_bool(); m = ctypes.c_size_t(1)
r = f(b"opt.libpurge", ctypes.byref(v), ctypes.byref(m), None, 0)
print("version", s.value.decode(), "opt.libpurge", v.value if r == 0 else "error %d" % r)' 2>&1)" >>"$sum"
done
printf 'round\tsetting\tbuild\tstatus\twall_s\tcpu_s\tcalls\tok\tskipped\tfail_or_error\tcases\tresult\tload_after\n' >"$out/runs.tsv"
ev=task-clock,syscalls:sys_enter_madvise,syscalls:sys_enter_process_madvise
val() { awk -F, -v e="$2" '$3 == e { print $1 }' "$1"; }
worse_all=""
for r in $(seq 1 "$rounds"); do
	i=0
	for s in d0 default; do
		if [ $(((r + i) % 2)) -eq 1 ]; then order="stock patched"; else order="patched stock"; fi
		i=$((i + 1))
		for b in $order; do
			n=$b.$s.$r
			env_conf=()
			[ -n "${conf[$s]}" ] && env_conf=(MALLOC_CONF="${conf[$s]}")
			t0=$(date +%s)
			# cpython_run's "VAR=VALUE... -- ARGS": perf stat (not preloaded)
			# runs env with the preload, then regrtest
			cpython_run "$out" "$n" 1800 perf stat -x, -o "$out/$n.perf" -e "$ev" \
				env LD_PRELOAD="${lib[$b]}" "${env_conf[@]}" -- -j2 -v --timeout 600 "${tests[@]}"
			rc=$cpython_rc
			t1=$(date +%s)
			cpu=$(awk -v c="$(val "$out/$n.perf" task-clock)" 'BEGIN { printf "%.1f", c / 1000 }')
			calls=$(($(val "$out/$n.perf" syscalls:sys_enter_madvise) + $(val "$out/$n.perf" syscalls:sys_enter_process_madvise)))
			res=$(grep -aE '^(== )?Tests result' "$out/$n.log" | tail -n 1 | tr -s ' ')
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$s" "$b" "$rc" "$((t1 - t0))" \
				"$cpu" "$calls" "$(grep -c ' ok$' "$out/$n.res")" "$(grep -c ' skipped$' "$out/$n.res")" \
				"$(grep -Ec ' (FAIL|ERROR)$' "$out/$n.res")" "$(grep -c . "$out/$n.res")" "$res" \
				"$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/runs.tsv"
			{
				echo "== $n: ${env_conf[*]:-(no MALLOC_CONF)} LD_PRELOAD=${lib[$b]} $py -m test -j2 -v --timeout 600 ${tests[*]}"
				echo "   status $rc, $((t1 - t0)) s wall, load average after $(cut -d' ' -f1-3 /proc/loadavg)"
				echo "   cases: $(grep -c ' ok$' "$out/$n.res") ok, $(grep -c ' skipped$' "$out/$n.res") skipped," \
					"$(grep -Ec ' (FAIL|ERROR)$' "$out/$n.res") FAIL or ERROR, $(grep -c . "$out/$n.res") in all;" \
					"purge calls $calls, CPU $cpu s"
				grep -aE ' (FAIL|ERROR)$' "$out/$n.res" | sed 's/^/   failed: /'
				grep -aE '^(== )?Tests result' "$out/$n.log" | sed 's/^/   /'
			} >>"$sum"
		done
		# every case that passed under stock and did not pass (or did not run) patched
		w=$(join -a1 -e MISSING -o 0,1.2,2.2 <(awk '{print $1, $NF}' "$out/stock.$s.$r.res") \
			<(awk '{print $1, $NF}' "$out/patched.$s.$r.res") | awk '$2 == "ok" && $3 != "ok"')
		[ -n "$w" ] && worse_all="$worse_all$s round $r:"$'\n'"$w"$'\n'
	done
done
if [ -n "$worse_all" ]; then
	{
		echo "FAIL: cases that passed under stock and not under patched (same setting and round):"
		printf '%s' "$worse_all"
	} | tee -a "$sum"
	exit 1
fi
echo "PASS: no patched run fails a case that the stock run of its setting and round passes" | tee -a "$sum"
exit 0
