#!/bin/sh
# SPDX-License-Identifier: MIT
#
# test-shim.sh SHIM WORKLOAD FORK-STORM CHURN FREEBACK FREEBACK-NOPIE FREEBACK-LINKED
#   OTHER-MALLOC LIFETIME: run short multi-threaded workloads under the unmodified
# jemalloc with libpurge_jemalloc.so in check mode.
# Fails when
#  - the workload finds a damaged record or canary (a purge hit live memory),
#  - the shim's check mode aborts (a handed-out range was still pending, or
#    a range reported zero was not),
#  - the shim did not actually run (no hooks, no releases, no checks), also
#    in a non-PIE program and with jemalloc linked instead of preloaded,
#    or runs where another allocator serves malloc,
#  - fork() while other threads allocate hangs or a child fails,
#  - a process ends at another time or with another status than under
#    jemalloc alone (its last thread calls pthread_exit or returns, exit,
#    _exit, exec; in a fork child too),
#  - a program that frees most of its heap and goes quiet does not get it
#    back (RSS) soon after the max delay, or at a pressure event (the idle
#    thread), also in a fork child,
#  - a process that never released memory runs the idle thread, or a
#    wrapper (timeout) runs it or holds the pressure FIFO its child needs,
#  - a pressure endpoint (/dev//null, /dev/zero) makes the idle thread spin
#    or stall, or the verbose line does not say why a trigger was refused,
#  - under MALLOC_CONF=thp:always the queues lack PURGE_HUGE (or keep it
#    with PURGE_JEMALLOC_HUGE=0), or the shim's mappings lack the
#    MADV_HUGEPAGE hint jemalloc's own would get,
#  - jemalloc's background threads keep running under the shim (or are
#    stopped with PURGE_JEMALLOC_KEEP_BG_THREAD=1),
#  - the shim talks where it should not (no jemalloc) or stays silent where
#    it should not (ignored libpurge knobs), or its stats are malformed.
# Exit 77 (meson: skipped) when libjemalloc.so.2 cannot be found; set
# JEMALLOC_LIB=/path/to/libjemalloc.so.2 to point at one.
set -u

shim=$1
work=$2
storm=${3:-}
churn=${4:-}
freeback=${5:-}
nopie=${6:-}
linked=${7:-}
other=${8:-}
lifetime=${9:-}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# find_jemalloc, and exit 77 without it
# shellcheck source=find-jemalloc.sh
. "${0%/*}/find-jemalloc.sh"

failed=0
fail() {
	echo "FAIL [$name]: $*"
	failed=1
}

# Value of KEY=N (the shim's lines) or `libpurge[PID PROGRAM]: KEY N`
# (libpurge's purge_stats_format lines) in the log, last occurrence, or empty.
stat() {
	sed -n -e "s/.*[ :]$1=\([0-9][0-9]*\).*/\1/p" \
		-e "s/^libpurge\[[^]]*\]: $1 \([0-9][0-9]*\)\$/\1/p" "$tmp/$name.log" | tail -n 1
}

# At least MIN: stat_min KEY MIN
stat_min() {
	v=$(stat "$1")
	if [ -z "$v" ] || [ "$v" -lt "$2" ]; then
		fail "$1=${v:-missing}, expected >= $2"
	fi
}

stat_eq() {
	v=$(stat "$1")
	[ "$v" = "$2" ] || fail "$1=${v:-missing}, expected $2"
}

# run NAME PRELOAD "VAR=VALUE ..." WORKLOAD-ARGS...
run() {
	name=$1
	preload=$2
	vars=$3
	shift 3
	echo "== $name: LD_PRELOAD='$preload' $vars $work -V $*"
	# shellcheck disable=SC2086 # $vars is a list of VAR=value words
	env LD_PRELOAD="$preload" PURGE_JEMALLOC_CHECK=1 PURGE_JEMALLOC_STATS=1 $vars \
		"$work" -V "$@" >"$tmp/$name.log" 2>&1
	rc=$?
	cat "$tmp/$name.log"
	[ "$rc" = 0 ] || fail "exit status $rc"
	grep -q "CHECK FAILED\|CANARY FAILED" "$tmp/$name.log" && fail "check failure above"
	stat_min arenas_hooked 1
	stat_min dalloc 1
	stat_min pending_checks 1
	stat_eq failures 0
	stat_eq double_release 0
}

both="$shim $je"

# Tiny thresholds: ranges are flushed before they come back, so hand-outs
# take both paths (cancelled = not zero, flushed = zero) and the zero scan
# has work; jitter and several live chunks make jemalloc split and merge.
tiny="PURGE_JEMALLOC_MAX_RANGES=4 PURGE_JEMALLOC_MAX_BYTES=1M PURGE_JEMALLOC_MAX_DELAY_MS=1"
run tiny "$both" "$tiny" -t 4 -s 256K -j 50 -l 4 -r 200 -d 2
stat_min steal 1 # hand-outs from another arena's pool, checked like the others
stat_min flushes 2
stat_min cancelled_bytes 1
stat_min zero_ranges 1
stat_min pmadv_calls 0

run tiny-loop "$both" "$tiny PURGE_MODE=loop" -t 4 -s 256K -j 50 -l 4 -r 200 -d 1
stat_min madv_calls 1
stat_eq pmadv_calls 0

# realloc growth makes jemalloc ask for memory at a fixed address (in-place
# expansion, the new_addr path); calloc makes it demand zeroed extents, and
# the workload checks every calloc'ed word (-V).
run grow-calloc "$both" "$tiny" -t 4 -s 256K -j 50 -l 4 -r 100 -d 2 -g -z
stat_min fixed 1
stat_min zero_ranges 1

# Shim defaults on the default workload shape.
run default "$both" "MALLOC_CONF=dirty_decay_ms:0,muzzy_decay_ms:0" -t 3 -s 5M -r 200 -d 1
stat_min pool 1
# no limit on the pools' address space, but 1 GiB under strict overcommit
if [ "$(cat /proc/sys/vm/overcommit_memory 2>/dev/null)" = 2 ]; then
	stat_eq pool_max 1073741824
else
	stat_eq pool_max 0
fi

# A heap of thousands of small extents freed in random order (16 KiB values
# replaced by 512-byte ones and back): the pool's size bins with many
# ranges, and a queue of thousands of ranges.  churn checks every value
# before it frees it; check mode checks every hand-out.
if [ -n "$churn" ]; then
	name=churn
	echo "== $name: LD_PRELOAD='$both' $churn -m 64M -n 3"
	env LD_PRELOAD="$both" PURGE_JEMALLOC_CHECK=1 PURGE_JEMALLOC_STATS=1 \
		MALLOC_CONF=dirty_decay_ms:0,muzzy_decay_ms:0 PURGE_JEMALLOC_MAX_BYTES=8M \
		"$churn" -m 64M -n 3 >"$tmp/$name.log" 2>&1 || fail "exit status $?"
	grep -q "CHECK FAILED" "$tmp/$name.log" && fail "check failure above"
	grep RESULT "$tmp/$name.log"
	stat_min pending_checks 10000
	stat_min zero_ranges 1000
	stat_min flush_to 1
	stat_eq failures 0
	stat_eq double_release 0
fi

# Chunks above opt.oversize_threshold (8 MiB) live in jemalloc's separate
# huge arena: it must be hooked too.
run huge "$both" "" -t 2 -s 9M -l 2 -r 50 -d 1
v=$(grep -c '+huge' "$tmp/huge.log")
[ "$v" -ge 1 ] || fail "huge arena not hooked"

# Huge pages: under MALLOC_CONF=thp:always the shim sets PURGE_HUGE on its
# queues (purge_huge=1 in the stats, and the verbose line says so) where
# the system has THP, and libpurge's frame plan sees the releases: 5 MiB
# chunks hold whole 2 MiB frames, which frames_whole counts.  Off with
# PURGE_JEMALLOC_HUGE=0, and then no frame is planned.  The workload's and
# check mode's checks hold throughout.
huge_want=1
grep -q '\[never\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null && huge_want=0
[ -r /sys/kernel/mm/transparent_hugepage/enabled ] || huge_want=0
run thp-huge "$both" "MALLOC_CONF=thp:always PURGE_JEMALLOC_VERBOSE=1 $tiny" \
	-t 2 -s 5M -l 2 -j 30 -r 50 -d 1
stat_eq purge_huge "$huge_want"
if [ "$huge_want" = 1 ]; then
	stat_min frames_whole 1
	grep -q 'huge pages: PURGE_HUGE on' "$tmp/$name.log" || fail "verbose line: not on"
fi
run thp-off "$both" "MALLOC_CONF=thp:always PURGE_JEMALLOC_HUGE=0 PURGE_JEMALLOC_VERBOSE=1 $tiny" \
	-t 2 -s 5M -l 2 -j 30 -r 50 -d 1
stat_eq purge_huge 0
stat_eq frames_whole 0
grep -q 'huge pages: PURGE_HUGE off (PURGE_JEMALLOC_HUGE' "$tmp/$name.log" ||
	fail "verbose line: not off by PURGE_JEMALLOC_HUGE"

# The shim's mappings get the hint jemalloc's own would get: with the
# system at "madvise", MADV_HUGEPAGE under thp:always ("hg" in VmFlags of
# /proc/PID/smaps) on the 16 MiB that hold freeback's heap (the pool keeps
# them mapped after the frees), none by default.  jemalloc's own mappings
# (metadata, the request that creates the huge arena) have it too: 16.5
# MiB here without the shim's hint, which failed the check at 24 MiB.
# hg_kib NAME MALLOC_CONF: KiB of freeback's mappings that carry hg.
hg_kib() {
	name=$1
	env LD_PRELOAD="$both" MALLOC_CONF="$2" "$freeback" -a 16M -f 8M -w 1500 -p 0 \
		>"$tmp/$name.log" 2>&1 &
	pid=$!
	sleep 0.5
	awk '$1 == "Size:" { size = $2 } $1 == "VmFlags:" && / hg/ { kib += size }
		END { print kib + 0 }' "/proc/$pid/smaps"
	wait "$pid"
}
if [ -n "$freeback" ] && grep -q '\[madvise\]' /sys/kernel/mm/transparent_hugepage/enabled; then
	name=thp-hint
	n=$(hg_kib thp-hint thp:always)
	echo "== $name: $n KiB mapped MADV_HUGEPAGE under thp:always"
	[ "$n" -ge 24576 ] || fail "$n KiB MADV_HUGEPAGE under thp:always, expected >= 24576"
	name=thp-nohint
	n=$(hg_kib thp-nohint retain:false)
	echo "== $name: $n KiB mapped MADV_HUGEPAGE by default"
	[ "$n" = 0 ] || fail "$n KiB MADV_HUGEPAGE without thp:always"
fi

# jemalloc's background threads have nothing to decay under the shim and
# cost every free a wake-up (shim.c): the idle thread turns them off
# (MALLOC_CONF=background_thread:true starts four here), unless
# PURGE_JEMALLOC_KEEP_BG_THREAD=1.  Those threads make the process
# multithreaded before its first release, so the idle thread starts at the
# first extent allocation after it (idle.c): ebizzy-lite allocates all the
# time.
# bg_threads NAME VAR=VALUE...: jemalloc_bg_thd threads of ebizzy-lite after 1 s.
bg_threads() {
	name=$1
	shift
	env LD_PRELOAD="$both" MALLOC_CONF=background_thread:true PURGE_JEMALLOC_STATS=1 "$@" \
		"$work" -t 1 -s 1M -d 2 >"$tmp/$name.log" 2>&1 &
	pid=$!
	sleep 1
	cat /proc/"$pid"/task/*/comm | grep -c '^jemalloc_bg_thd$'
	wait "$pid"
}
if [ -n "$freeback" ]; then
	name=bg-off
	n=$(bg_threads bg-off)
	echo "== $name: $n jemalloc background threads left"
	[ "$n" = 0 ] || fail "$n jemalloc background threads still run"
	stat_min bg_thread_off 1
	name=bg-keep
	n=$(bg_threads bg-keep PURGE_JEMALLOC_KEEP_BG_THREAD=1)
	echo "== $name: $n jemalloc background threads kept"
	[ "$n" -ge 1 ] || fail "PURGE_JEMALLOC_KEEP_BG_THREAD=1: no jemalloc background thread"
	stat_eq bg_thread_off 0
fi

# Shim after jemalloc in LD_PRELOAD: the shim's malloc_conf loses, so the
# user passes retain:false; MADV_FREE never yields zero ranges from the pool.
run order-free "$je $shim" \
	"MALLOC_CONF=retain:false,dirty_decay_ms:0,muzzy_decay_ms:0 PURGE_JEMALLOC_ADVICE=free $tiny" \
	-t 2 -s 512K -j 30 -l 3 -r 100 -d 1
stat_eq retain 0

# retain:true: jemalloc 5.3 crashes when extent hooks give memory back
# while it retains (README.md), so the shim stays inactive and says so.
name=retain
echo "== $name: LD_PRELOAD='$both' MALLOC_CONF=retain:true $work -t 4 -s 1M -j 90 -l 4 -d 1"
env LD_PRELOAD="$both" MALLOC_CONF=retain:true "$work" -t 4 -s 1M -j 90 -l 4 -d 1 \
	>"$tmp/$name.log" 2>&1 || fail "exit status $?"
grep -q 'opt.retain is on: shim inactive' "$tmp/$name.log" || fail "no 'shim inactive' warning"

# Flushes: by default partial (purge_flush_to down to KEEP_BYTES, and
# PURGE_INCREMENTAL for the count and age thresholds); here one range at a
# time, then the whole queue every time.  Zero is decided by cancel's
# answer alone, whichever ranges a flush settled.
run batch1 "$both" "$tiny PURGE_BATCH=1" -t 4 -s 256K -j 50 -l 4 -r 100 -d 1 -z
stat_min flush_to 1
stat_min zero_ranges 1
run whole "$both" "$tiny PURGE_JEMALLOC_INCREMENTAL=0 PURGE_JEMALLOC_KEEP_BYTES=0" \
	-t 4 -s 256K -j 50 -l 4 -r 100 -d 1 -z
stat_min flushes 2
stat_min zero_ranges 1

# fork() 200 times while 4 threads allocate: the atfork handlers must leave
# no lock held in parent or child.  A hang is a failure (timeout), with no
# second try: children that hung inside jemalloc (its radix tree's init
# lock) did so because the shim grew the address space at forks, and
# jemalloc alone hung in none of 50,000 forks of the stress variant
# (test-fork.sh, README.md "Known limits").
if [ -n "$storm" ]; then
	name=fork
	echo "== $name: LD_PRELOAD='$both' $storm -t 4 -n 200"
	# shellcheck disable=SC2086 # $tiny is a list of VAR=value words
	env LD_PRELOAD="$both" PURGE_JEMALLOC_STATS=1 $tiny \
		timeout 120 "$storm" -t 4 -n 200 >"$tmp/$name.log" 2>&1
	rc=$?
	cat "$tmp/$name.log"
	[ "$rc" = 0 ] || fail "exit status $rc (124: hung)"
	stat_eq forks 200
	stat_eq failed 0
	stat_eq hung 0
	stat_min dalloc 1
fi

# A process ends when, and with the status, it would under jemalloc alone,
# however its last thread ends (lifetime.c): glibc calls exit(0) when the
# last thread it counts ends, and the shim's idle thread must not be one of
# them.  Each case runs once without the shim and once with it (where its
# thread must run: "idle thread: yes" from every process of the case);
# the statuses must match.  A hang is a failure: the supervisor kills it
# after 30 s (and lifetime's fork parent kills a child left after 15 s).
# lifetime_case MODE [N]
lifetime_case() {
	name="lifetime $*"
	timeout -s KILL 30 env LD_PRELOAD="$je" "$lifetime" "$@" >"$tmp/life-je.log" 2>&1
	want=$?
	timeout -s KILL 30 env LD_PRELOAD="$both" "$lifetime" "$@" >"$tmp/life.log" 2>&1
	rc=$?
	yes=$(grep -c 'idle thread: yes' "$tmp/life.log")
	all=$(grep -c 'idle thread:' "$tmp/life.log")
	echo "== $name: status $rc (jemalloc alone: $want), idle thread in $yes of $all processes"
	[ "$rc" = "$want" ] || { cat "$tmp/life.log"; fail "exit status $rc, jemalloc alone $want (137: hung)"; }
	[ "$all" -ge 1 ] && [ "$yes" = "$all" ] || fail "the shim's thread ran in $yes of $all processes"
	lifetime_same
}
# The same atexit lines (which thread ran exit), without the pids.
lifetime_same() {
	grep -q 'idle thread: yes' "$tmp/life-je.log" && fail "a purge-idle thread without the shim"
	for f in life-je life; do
		sed -n 's/^lifetime\[[0-9]*\]: atexit/atexit/p' "$tmp/$f.log" >"$tmp/$f.atexit"
	done
	cmp -s "$tmp/life-je.atexit" "$tmp/life.atexit" ||
		fail "atexit ran elsewhere: $(tr '\n' ' ' <"$tmp/life.atexit") (jemalloc alone: $(tr '\n' ' ' <"$tmp/life-je.atexit"))"
}
if [ -n "$lifetime" ]; then
	lifetime_case return 3
	for m in pthread_exit last-return last-pthread-exit main-last fork-return fork-pthread_exit; do
		lifetime_case "$m"
	done
	lifetime_case exit 7
	lifetime_case _exit 9
	lifetime_case exec 5
	lifetime_case fork-exit 4
	lifetime_case fork-_exit 6
	lifetime_case fork-exec 8
	# main calls pthread_exit at once after its first release: the
	# shim's thread may start only after main has ended (5 runs)
	name="lifetime pthread_exit-now"
	for i in 1 2 3 4 5; do
		timeout -s KILL 30 env LD_PRELOAD="$je" "$lifetime" pthread_exit-now \
			>"$tmp/life-je.log" 2>&1
		want=$?
		timeout -s KILL 30 env LD_PRELOAD="$both" "$lifetime" pthread_exit-now \
			>"$tmp/life.log" 2>&1
		rc=$?
		[ "$rc" = "$want" ] || fail "run $i: exit status $rc, jemalloc alone $want (137: hung)"
		lifetime_same
	done
	echo "== $name: 5 runs"
fi

# Quiet where jemalloc does not serve malloc (the shim alone: glibc's
# malloc), unless asked.
name=quiet
out=$(env LD_PRELOAD="$shim" "$work" -h 2>&1 | grep purge_jemalloc)
[ -z "$out" ] || fail "talks without jemalloc: $out"
out=$(env LD_PRELOAD="$shim" PURGE_JEMALLOC_VERBOSE=1 "$work" -h 2>&1 | grep -c 'shim inactive')
[ "$out" = 1 ] || fail "PURGE_JEMALLOC_VERBOSE=1 did not say 'shim inactive'"

# The idle thread: freeback frees 56 of 64 MiB and sleeps; 99% of that
# must leave RSS within 600 ms at a max delay of 100 ms (slack for a busy
# machine; the goal, max delay + 200 ms, is measured in README.md), in the
# process and in a fork child (which starts a thread of its own).  Without
# the thread the bytes threshold keeps up to MAX_BYTES (32M) pending: the
# same run must miss, or the check proves nothing.  Then a pressure event
# (a byte on the FIFO $MEMORY_PRESSURE_WATCH names, once the shim opens it,
# a second after start) with no age limit.
# idle NAME EXPECTED-STATUS VAR=VALUE... -- FREEBACK-ARGS...
idle() {
	name=$1
	want=$2
	shift 2
	vars=
	while [ "$1" != -- ]; do
		vars="$vars $1"
		shift
	done
	shift
	echo "== $name:$vars freeback -a 64M -f 56M -w 600 $*"
	# shellcheck disable=SC2086 # $vars is a list of VAR=value words
	env LD_PRELOAD="$both" PURGE_JEMALLOC_STATS=1 $vars "$freeback" -a 64M -f 56M -w 600 "$@" \
		>"$tmp/$name.log" 2>&1
	rc=$?
	grep '^freeback: returned' "$tmp/$name.log"
	[ "$rc" = "$want" ] || fail "exit status $rc, expected $want"
}
if [ -n "$freeback" ]; then
	idle idle 0 PURGE_JEMALLOC_MAX_DELAY_MS=100 --
	stat_min idle_flushes 1
	stat_eq idle_thread 1
	# the parent runs the thread, so the child has had a second thread:
	# its own starts at its first extent allocation after its first
	# release (idle.c), which -A makes; that thread's own pages (0.7 MiB
	# here, README "Known limits") count against what the child gives
	# back, hence 95%
	idle idle-fork 0 PURGE_JEMALLOC_MAX_DELAY_MS=100 -- -F -A -p 95
	stat_min idle_flushes 1
	idle idle-off 1 PURGE_JEMALLOC_MAX_DELAY_MS=100 PURGE_JEMALLOC_IDLE=0 --
	stat_eq idle_thread 0
	mkfifo "$tmp/pressure.fifo"
	idle pressure 0 PURGE_JEMALLOC_MAX_DELAY_MS=0 "MEMORY_PRESSURE_WATCH=$tmp/pressure.fifo" \
		-- -P "$tmp/pressure.fifo"
	stat_min pressure_flushes 1
	idle no-pressure 1 PURGE_JEMALLOC_MAX_DELAY_MS=0 "MEMORY_PRESSURE_WATCH=$tmp/pressure.fifo" --
	# no release, no thread, no trigger
	# (16 MiB: jemalloc gives back a page of its own while it grows to 64)
	idle no-release 0 PURGE_JEMALLOC_MAX_DELAY_MS=100 -- -a 16M -f 0 -w 1500 -p 0
	stat_eq idle_thread 0
	stat_eq pressure_watched 0
	stat_eq idle_wakes 0
fi

# No endpoint makes the idle thread spin or stall.  /dev/null under
# another spelling polls readable at end of file for ever: an end of file
# is no event (no flush), and the descriptor is dropped.  /dev/zero always
# has data: each event reads a bounded amount.  Either way the thread must
# still settle the freed memory (the pressure flush or the age, 1.5 s),
# and wake a bounded number of times (idle_wakes; one a second when idle,
# 10 pressure wake-ups a second at most: a spin makes millions in the 3 s).
if [ -n "$freeback" ]; then
	for w in /dev//null //dev/null /dev/./null /dev/zero; do
		idle "endpoint$(echo "$w" | tr '/.' '_-')" 0 PURGE_JEMALLOC_MAX_DELAY_MS=1500 \
			"MEMORY_PRESSURE_WATCH=$w" -- -w 3000
		v=$(stat idle_wakes)
		[ -n "$v" ] && [ "$v" -le 100 ] || fail "idle_wakes=${v:-missing}, expected <= 100"
		v=$(stat pressure_flushes)
		[ -n "$v" ] && [ "$v" -le 100 ] || fail "pressure_flushes=${v:-missing}, expected <= 100"
		if [ "$w" != /dev/zero ]; then
			stat_eq pressure_flushes 0
			stat_eq pressure_watched 0
		fi
	done
fi

# A PSI trigger the kernel refuses (a 20 s window: 10 s is the most it
# takes) comes back as a bare EINVAL: the verbose line says why.
if [ -n "$freeback" ] && [ -w /proc/pressure/memory ]; then
	idle psi-einval 0 PURGE_JEMALLOC_VERBOSE=1 MEMORY_PRESSURE_WATCH=/proc/pressure/memory \
		"MEMORY_PRESSURE_WRITE=$(printf 'some 200000 20000000\n' | base64)" -- -f 8M -w 1500 -p 0
	grep 'pressure: ' "$tmp/$name.log"
	grep -q 'pressure: not watched: EINVAL: the kernel refused the PSI trigger' "$tmp/$name.log" ||
		fail "the verbose line does not say why the trigger was refused"
elif [ -n "$freeback" ]; then
	echo "== psi-einval: skipped (no writable /proc/pressure/memory)"
fi

# LD_PRELOAD reaches every process of a tree.  Only a process that
# releases memory starts the idle thread and watches the pressure
# endpoint: under `timeout 20 nice freeback -P FIFO`, timeout (which frees
# nothing) must have no purge-idle thread and no descriptor of the FIFO
# 1.5 s in (the trigger opens 1 s after the thread starts; timeout's
# stats never show: its atexit handler closes stderr), and the FIFO's byte
# must reach freeback (nice execs it).
if [ -n "$freeback" ] && command -v timeout >/dev/null && command -v nice >/dev/null; then
	name=wrappers
	mkfifo "$tmp/wrap.fifo"
	echo "== $name: timeout 20 nice freeback -a 64M -f 56M -w 3000 -P FIFO"
	env LD_PRELOAD="$both" PURGE_JEMALLOC_STATS=1 PURGE_JEMALLOC_VERBOSE=1 \
		PURGE_JEMALLOC_MAX_DELAY_MS=0 MEMORY_PRESSURE_WATCH="$tmp/wrap.fifo" \
		timeout 20 nice "$freeback" -a 64M -f 56M -w 3000 -P "$tmp/wrap.fifo" \
		>"$tmp/$name.log" 2>&1 &
	pid=$!
	sleep 1.5
	threads=$(cat /proc/"$pid"/task/*/comm 2>/dev/null | tr '\n' ' ')
	fifo=0
	for f in /proc/"$pid"/fd/*; do
		[ "$(readlink "$f" 2>/dev/null)" = "$tmp/wrap.fifo" ] && fifo=$((fifo + 1))
	done
	wait "$pid" || fail "exit status $?"
	grep '^freeback: returned\|pressure: ' "$tmp/$name.log"
	echo "timeout's threads: $threads; its descriptors of the FIFO: $fifo"
	case " $threads" in *" purge-idle "*) fail "timeout runs the idle thread" ;; esac
	[ "$fifo" = 0 ] || fail "timeout has the FIFO open"
	v=$(sed -n 's/^purge_jemalloc\[[0-9]* freeback\]: .* pressure_flushes=\([0-9]*\).*/\1/p' \
		"$tmp/$name.log" | tail -n 1)
	[ -n "$v" ] && [ "$v" -ge 1 ] || fail "freeback: pressure_flushes=${v:-missing}, expected >= 1"
fi

# Which jemalloc serves malloc is asked of jemalloc.  Non-PIE, a program
# that takes malloc's address sees its own PLT entry as "malloc" (Debian's
# python3 does): the shim must still find jemalloc.  So when jemalloc is
# linked rather than preloaded.  When another allocator is in front of
# jemalloc, jemalloc serves nothing: the shim stays out.
# active NAME PRELOAD PROGRAM: the shim says it is active and hooks run.
active() {
	name=$1
	echo "== $name: LD_PRELOAD='$2' $3 -a 16M -f 8M -w 0 -p 0"
	env LD_PRELOAD="$2" PURGE_JEMALLOC_VERBOSE=1 PURGE_JEMALLOC_STATS=1 \
		"$3" -a 16M -f 8M -w 0 -p 0 >"$tmp/$name.log" 2>&1 || fail "exit status $?"
	cat "$tmp/$name.log"
	grep -q 'shim active' "$tmp/$name.log" || fail "shim not active"
	stat_min dalloc 1
}
if [ -n "$nopie" ]; then
	active non-pie "$both" "$nopie"
else
	echo "== non-pie: skipped (the compiler builds no non-PIE programs)"
fi
[ -n "$linked" ] && active linked "$shim" "$linked"
if [ -n "$other" ] && [ -n "$freeback" ]; then
	name="other-malloc"
	out=$(env LD_PRELOAD="$shim $other $je" PURGE_JEMALLOC_VERBOSE=1 PURGE_JEMALLOC_STATS=1 \
		"$freeback" -a 16M -f 8M -w 0 -p 0 2>&1 | grep purge_jemalloc)
	echo "== $name: $out"
	[ "$out" = "${out#*shim inactive}" ] && fail "shim did not stay inactive: $out"
	[ "$(echo "$out" | grep -c .)" = 1 ] || fail "more than the one 'inactive' line: $out"
fi

# libpurge's ignored environment knobs are named in one warning line.
name=env-ignored
out=$(env LD_PRELOAD="$both" PURGE_BATCH=9999 PURGE_MODE=fast "$work" -h 2>&1 |
	grep 'purge_jemalloc\[[0-9]* ebizzy-lite\]: .*PURGE_BATCH=9999 PURGE_MODE=fast')
[ -n "$out" ] || fail "no warning about PURGE_BATCH=9999 PURGE_MODE=fast"
echo "$out"

# Every line the shim writes names the process (pid and program), so that
# under time(1) or strace, or from a fork child, it is clear whose it is.
name=tagged
env LD_PRELOAD="$both" PURGE_JEMALLOC_STATS=1 "$work" -t 2 -s 1M -n 20 >"$tmp/$name.out" \
	2>"$tmp/$name.log" &
pid=$!
wait "$pid" || fail "exit status $?"
n_all=$(grep -c '^\(purge_jemalloc\|libpurge\)' "$tmp/$name.log")
n_tag=$(grep -c "^\(purge_jemalloc\|libpurge\)\[$pid ebizzy-lite\]: " "$tmp/$name.log")
echo "== $name: $n_tag of $n_all stats lines say [$pid ebizzy-lite]"
if [ "$n_all" -le 10 ] || [ "$n_tag" != "$n_all" ]; then
	fail "$n_tag of $n_all lines tagged [$pid ebizzy-lite]"
fi
stat_min enqueued_ranges 1

# PURGE_JEMALLOC_STATS=json: one JSON object with both sets of counters.
name=json
env LD_PRELOAD="$both" PURGE_JEMALLOC_STATS=json "$work" -t 2 -s 1M -n 20 \
	>"$tmp/$name.out" 2>"$tmp/$name.log"
json=$(grep '^{"purge_jemalloc":' "$tmp/$name.log")
[ "$(echo "$json" | grep -c .)" = 1 ] || fail "no single JSON stats line"
if command -v python3 >/dev/null 2>&1; then
	echo "$json" | python3 -c 'import json, sys
d = json.load(sys.stdin)
assert d["purge_jemalloc"]["dalloc"] > 0, d
assert d["purge_jemalloc"]["pid"] > 0 and d["purge_jemalloc"]["program"] == "ebizzy-lite", d
assert d["libpurge"]["enqueued_ranges"] > 0, d
print("json: ok,", len(d["purge_jemalloc"]), "+", len(d["libpurge"]), "members")' ||
		fail "JSON stats do not parse or lack counters: $json"
fi

if [ "$failed" = 0 ]; then
	echo "PASS"
fi
exit "$failed"
