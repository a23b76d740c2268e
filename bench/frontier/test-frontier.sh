#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test-frontier.sh FRONTIER BUILD: frontier.sh's smoke test, a few seconds.
#  1. the records against a program whose figures are known: 64 MiB
#     touched and held, 1.0 s of CPU burnt by two threads while the main
#     one waits, and exactly 1000 madvise calls more than its twin;
#  2. ebizzy-lite under two jemalloc configurations: the CSV's shape, the
#     table, the dominance lines, the PNG;
#  3. redis-server (where it is installed), both phases, tiny: p99 and the
#     phase rows;
#  4. the dominance check on made-up runs with known answers (-R);
#  5. a run that fails: exit status 1, its row out of the medians.
# Exit 77 without perf's syscall tracepoints, python3 or libjemalloc.so.2.
set -u
frontier=$1
build=$2
py=/usr/bin/python3
je=$(/sbin/ldconfig -p 2>/dev/null | awk '$1 == "libjemalloc.so.2" { print $NF; exit }')
events=task-clock,minor-faults,syscalls:sys_enter_madvise,syscalls:sys_enter_munmap
perf stat -x, -o /dev/null -e "$events" true 2>/dev/null || { echo "skip: perf cannot count $events"; exit 77; }
[ -x "$py" ] || { echo "skip: no $py"; exit 77; }
[ -n "$je" ] || { echo "skip: no libjemalloc.so.2"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2 && fail=1; }

# csv OUT WORKLOAD CONFIG COLUMN: one cell of OUT/frontier.csv
csv() {
	awk -F, -v w="$2" -v c="$3" -v k="$4" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		$1 == w && $3 == c { print $col[k] }' "$1/frontier.csv"
}
# within VALUE LO HI: LO <= VALUE <= HI (numbers)
within() { awk -v v="$1" -v a="$2" -v b="$3" 'BEGIN { exit !(v != "" && v + 0 >= a && v + 0 <= b) }'; }

# ---- 1. the records against known figures ---------------------------------
cat >"$tmp/known.py" <<'EOF'
import mmap, sys, threading, time
n = int(sys.argv[1])
m = mmap.mmap(-1, 64 << 20)
for off in range(0, 64 << 20, 4096):  # 16,384 pages faulted in
    m[off] = 1
def burn():  # 0.5 s of this thread's own CPU
    t = time.thread_time()
    while time.thread_time() - t < 0.5:
        pass
ts = [threading.Thread(target=burn) for _ in range(2)]
for t in ts: t.start()
for t in ts: t.join()
for _ in range(n):
    m.madvise(mmap.MADV_DONTNEED, 0, 4096)
print("RESULT ops_per_s=%d" % n)
EOF
out1=$tmp/known
"$frontier" -a 'libc - other -' -c libc -w 'known*' -r 1 -d 1 -o "$out1" \
	-x "known0 - calls/s $py $tmp/known.py 0" -x "known1000 - calls/s $py $tmp/known.py 1000" \
	>"$tmp/known.out" 2>&1 || bad "the known program: exit status $? ($(tail -n 3 "$tmp/known.out"))"
p0=$(csv "$out1" known0 libc purges_med)
p1=$(csv "$out1" known1000 libc purges_med)
if [ -z "$p0" ] || [ -z "$p1" ] || [ $((p1 - p0)) -ne 1000 ]; then
	bad "purge calls: $p1 - $p0, not exactly 1000 more"
fi
cpu=$(csv "$out1" known1000 libc cpu_s_med)
within "$cpu" 1.0 3.0 || bad "CPU of all threads: $cpu s, not 1.0 s (two threads' 0.5 s) and start-up"
flt=$(csv "$out1" known1000 libc minflt_med)
within "$flt" 16384 40000 || bad "minor faults: $flt, not the 16,384 pages touched and start-up"
peak=$(csv "$out1" known1000 libc rss_peak_mib_med)
avg=$(csv "$out1" known1000 libc rss_avg_mib_med)
within "$peak" 64 120 || bad "peak RSS: $peak MiB, not the 64 MiB held and the interpreter"
within "$avg" 32 "$peak" || bad "average RSS: $avg MiB, not most of the run at 64 MiB or more"
n=$(csv "$out1" known1000 libc rss_samples)
within "$n" 5 60 || bad "RSS samples: $n for a run of about a second, not one per 100 ms"
echo "known program: purges +$((p1 - p0)), cpu $cpu s, faults $flt, RSS avg $avg peak $peak MiB, $n samples"

# ---- 2. ebizzy-lite, two configurations -----------------------------------
out2=$tmp/lite
"$frontier" -b "$build" -j "$je" -P "$je" -p 'jep-d0 MALLOC_CONF=dirty_decay_ms:0' \
	-c 'je-d0 jep-d0' -w ebizzy-lite-t1 -r 1 -d 1 -o "$out2" >"$tmp/lite.out" 2>&1 ||
	bad "ebizzy-lite: exit status $? ($(tail -n 3 "$tmp/lite.out"))"
head -n 1 "$out2/frontier.csv" | tr , '\n' >"$tmp/cols"
for c in workload unit config family kind runs failed throughput_med throughput_min \
	throughput_max cpu_s_med rss_avg_mib_med rss_peak_mib_med minflt_med purges_med \
	munmap_med p99_ms_med rss_samples dominated_by closest; do
	grep -qx "$c" "$tmp/cols" || bad "frontier.csv has no column $c"
done
[ "$(wc -l <"$out2/frontier.csv")" -eq 3 ] || bad "frontier.csv: $(wc -l <"$out2/frontier.csv") lines, not a header and 2 rows"
awk -F, 'NR > 1 && NF != n { exit 1 } NR == 1 { n = NF }' "$out2/frontier.csv" ||
	bad "frontier.csv: rows of different lengths"
for c in je-d0 jep-d0; do
	within "$(csv "$out2" ebizzy-lite-t1 $c throughput_med)" 1 1e12 || bad "$c: no throughput"
	within "$(csv "$out2" ebizzy-lite-t1 $c purges_med)" 1 1e9 || bad "$c: no purge calls at dirty_decay_ms:0"
	[ "$(csv "$out2" ebizzy-lite-t1 $c p99_ms_med)" = NA ] || bad "$c: a p99 outside redis"
done
case $(csv "$out2" ebizzy-lite-t1 je-d0 dominated_by) in jep-d0 | none) ;; *) bad "je-d0: dominated_by" ;; esac
if ! grep -q '^je-d0 ' "$out2/report.txt" || ! grep -q '^  je-d0 .*dominated' "$out2/report.txt"; then
	bad "report.txt: no table row or dominance line for je-d0"
fi
if command -v gnuplot >/dev/null; then
	[ -s "$out2/frontier-ebizzy-lite-t1.png" ] || bad "no PNG"
fi

# ---- 3. redis, tiny ---------------------------------------------------------
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
	out3=$tmp/redis
	"$frontier" -j "$je" -c 'je-d0 je-d1000-bg' -w redis -k 2000 -K 100 -r 1 -o "$out3" \
		>"$tmp/redis.out" 2>&1 || bad "redis: exit status $? ($(tail -n 3 "$tmp/redis.out"))"
	for w in redis-p1 redis-p2; do
		for c in je-d0 je-d1000-bg; do
			within "$(csv "$out3" $w $c p99_ms_med)" 0.001 1e6 || bad "$w $c: no p99"
			within "$(csv "$out3" $w $c throughput_med)" 1 1e9 || bad "$w $c: no SET/s"
			within "$(csv "$out3" $w $c cpu_s_med)" 0.001 1e3 || bad "$w $c: no server CPU"
		done
	done
	within "$(csv "$out3" redis-p1 je-d0 purges_med)" 100 1e9 ||
		bad "redis-p1 je-d0: $(csv "$out3" redis-p1 je-d0 purges_med) purge calls for 2000 values freed at decay 0"
else
	echo "redis-server or redis-benchmark missing: redis part skipped"
fi

# ---- 4. dominance on made-up runs ---------------------------------------
# s1 is dominated by p1 at every boundary (equal throughput and RSS, 1.05x
# CPU); p2 has 1.06x CPU and dominates nothing; s3 has 1% more throughput
# than p1: not dominated, p2 the closest; m1 has no patched mimalloc point.
out4=$tmp/made
mkdir -p "$out4"
printf '%s\n' "s1 je stock je" "s2 je stock je" "s3 je stock je" "p1 je patched jep" \
	"p2 je patched jep" "m1 mi stock mi" "o1 je other je531" | tr ' ' '\t' >"$out4/configs.tsv"
printf 'w\tje,mi\tops/s\tmade up\n' >"$out4/workloads.tsv"
: >"$out4/header.txt"
: >"$out4/notes.txt"
run() { printf 'w\t%s\t%s\t%s\t%s\t%s\t%s\t1\t10\t1\t1\t1\t-\n' "$@"; }
{
	run s1 1 0 90 10 50
	run s1 2 0 100 10 50
	run s1 3 0 100 10 50
	run s1 4 1 999 1 1 # failed: left out
	run s2 1 0 100 10 60
	run s3 1 0 101 10 50
	run p1 1 0 97 10.5 50
	run p1 2 0 100 10.5 50
	run p1 3 0 130 10.5 50
	run p2 1 0 200 10.6 40
	run m1 1 0 1 1 1
	run o1 1 0 1 1 1
} >"$out4/runs.tsv"
"$frontier" -R "$out4" >"$tmp/made.out" 2>&1 || bad "-R: exit status $?"
for want in "s1 p1" "s2 p1" "s3 none" "p1 " "m1 none" "o1 "; do
	# shellcheck disable=SC2086 # two words
	set -- $want
	got=$(csv "$out4" w "$1" dominated_by)
	[ "$got" = "${2-}" ] || bad "made-up $1: dominated_by '$got', not '${2-}'"
done
[ "$(csv "$out4" w s3 closest)" = "p2 thr=1.98 rss=0.80 cpu=1.06" ] ||
	bad "made-up s3: closest '$(csv "$out4" w s3 closest)'"
[ "$(csv "$out4" w m1 closest)" = "no patched point" ] || bad "made-up m1: closest"
[ "$(csv "$out4" w s1 runs),$(csv "$out4" w s1 failed)" = 3,1 ] || bad "made-up s1: runs, failed"
[ "$(csv "$out4" w s1 throughput_med),$(csv "$out4" w s1 throughput_min),$(csv "$out4" w p1 throughput_max)" = 100,90,130 ] ||
	bad "made-up: median, min, max"

# ---- 5. a failing run -----------------------------------------------------
"$frontier" -a 'libc - other -' -c libc -w fails -x 'fails - ops/s false' -r 1 -d 1 \
	-o "$tmp/fails" >"$tmp/fails.out" 2>&1
rc=$?
[ "$rc" -eq 1 ] || bad "a failing run: exit status $rc, not 1"
grep -q 'FAILED runs' "$tmp/fails/report.txt" || bad "a failing run: not reported"
[ "$(csv "$tmp/fails" fails libc runs)" = 0 ] || bad "a failing run counted in the medians"

[ "$fail" = 0 ] && echo "frontier smoke test: all checks passed"
exit $fail
