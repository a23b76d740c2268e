#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-jemalloc.sh JE_REUSE [LIB]: the reuse-path tests (je-reuse.c) with the
# patched libjemalloc.so.2 preloaded, under several MALLOC_CONF settings:
# the knobs at their extremes, dirty_decay_ms:0, background_thread:true, and
# libpurge:false; memory pressure through a FIFO, and idle return.  LIB
# defaults to $JEMALLOC_PATCHED, else build.sh's output with its default
# OUTDIR (integrations-build/jemalloc/lib/libjemalloc.so.2 under the
# repository, which `rm -rf build` keeps).
# Exit 0 pass, 77 skip (no patched build: the reason is printed), 1 fail.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
reuse=$1
lib=${2:-${JEMALLOC_PATCHED:-$repo/integrations-build/jemalloc/lib/libjemalloc.so.2}}
if [ ! -f "$lib" ]; then
	echo "SKIP: no patched jemalloc at $lib: run integrations/jemalloc/build.sh" \
		"(it needs jemalloc 5.3.1's source, or --source TREE|TARBALL), or set JEMALLOC_PATCHED"
	exit 77
fi
fails=0 runs=0
errf=$(mktemp)
trap 'rm -f "$errf"' EXIT
run() { # CONF TEST
	runs=$((runs + 1))
	# timeout(1) without the preload: with background_thread:true its own
	# jemalloc would watch the pressure FIFO too, and could read the byte
	# the test writes for je-reuse (one byte wakes one reader)
	out=$(timeout 300 env LD_PRELOAD="$lib" MALLOC_CONF="$1" "$reuse" "$2" 2>&1)
	rc=$?
	if [ $rc -eq 77 ]; then
		echo "SKIP: $out"
		exit 77
	fi
	if [ $rc -ne 0 ]; then
		echo "FAIL ($rc): MALLOC_CONF=$1 $2: $out"
		fails=$((fails + 1))
	else
		echo "ok: MALLOC_CONF=$1 $out"
	fi
}
held=tcache:false,dirty_decay_ms:0,purge_max_delay_ms:-1,purge_max_pending:0
run "$held" zeros
run "$held,process_madvise_max_batch:1" zeros
run "$held" counters
run "$held" calloc
run "$held,process_madvise_max_batch:1" calloc
run "$held" stats
# purge_max_pending bounds the automatic arenas' total (8 MiB < 4 x 7 MiB)
run tcache:false,dirty_decay_ms:0,narenas:4,purge_max_delay_ms:-1,purge_max_pending:8388608 bound
run tcache:false,dirty_decay_ms:0,narenas:8,purge_max_pending:8388608 bound
run "$held,process_madvise_max_batch:1" counters
# purge_max_call bounds the bytes of one call: 16 MiB in 64 scattered
# extents takes 16 calls or more at 1 MiB (one call without a cap)
run "$held,purge_max_call:0" maxcall
run "$held" maxcall
run "$held,purge_max_call:1048576" maxcall
case $out in
*"purge_max_call 1048576)"*) ;;
*) echo "FAIL: purge_max_call:1048576 was not read back: $out"; fails=$((fails + 1)) ;;
esac
for conf in "" dirty_decay_ms:0 background_thread:true \
	dirty_decay_ms:0,process_madvise_max_batch:1 dirty_decay_ms:0,process_madvise_max_batch:1024,purge_max_delay_ms:-1 \
	dirty_decay_ms:0,purge_max_delay_ms:0 dirty_decay_ms:0,purge_max_pending:4096 \
	dirty_decay_ms:1000,background_thread:true,purge_max_delay_ms:1000000; do
	run "$conf" canaries
done
run dirty_decay_ms:0 fork
run dirty_decay_ms:0,background_thread:true fork
# a fork while another thread's flush has a call in the kernel (one range a
# call, so that the flush is long): no deadlock, the child's queue works
run tcache:false,process_madvise_max_batch:1,purge_max_delay_ms:-1,purge_max_pending:0 forkflush
run tcache:false,dirty_decay_ms:0,process_madvise_max_batch:1,background_thread:true forkflush
run dirty_decay_ms:0,background_thread:true,purge_max_delay_ms:100 background
run dirty_decay_ms:1000,background_thread:true background
# memory pressure (patch 0010): background thread 0 watches the FIFO that
# $MEMORY_PRESSURE_WATCH names and flushes the queues on its byte; idle
# return (0009): once nothing has been enqueued for purge_idle_ms.  Both
# with no age limit, so that nothing else settles what is pending.
fifodir=$(mktemp -d) || exit 1
trap 'rm -rf "$fifodir"' EXIT
mkfifo "$fifodir/pressure" || exit 1
quiet=tcache:false,dirty_decay_ms:0,purge_max_delay_ms:-1,background_thread:true
MEMORY_PRESSURE_WATCH=$fifodir/pressure run "$quiet,purge_idle_ms:-1" pressure
MEMORY_PRESSURE_WATCH=$fifodir/pressure run "$quiet,purge_idle_ms:-1,purge_pressure:false" pressure
run "$quiet,purge_idle_ms:200" idle
run "$quiet,purge_idle_ms:0" idle
run "$quiet,purge_idle_ms:-1" idle
# off: jemalloc purges as without the patches, and the queue stays empty
out=$(LD_PRELOAD=$lib MALLOC_CONF=libpurge:false,dirty_decay_ms:0 "$reuse" canaries 2>&1)
runs=$((runs + 1))
case $out in
"canaries: ok (enqueued 0 bytes"*) echo "ok: MALLOC_CONF=libpurge:false $out" ;;
*) echo "FAIL: libpurge:false: $out"; fails=$((fails + 1)) ;;
esac
# options out of range are rejected as jemalloc rejects its own;
# process_madvise_max_batch keeps 5.3.1's own rule (clipped to 128, no
# message).  Of libpurge's environment knobs, PURGE_BATCH does not apply (the
# batch is process_madvise_max_batch's) and jemalloc says so, PURGE_MODE=loop
# applies (madvise, not one vectored call), and an invalid PURGE_MODE is
# ignored with a message: the default mode.
says() { # WHAT EXPECTED ENV...
	what=$1 want=$2
	shift 2
	runs=$((runs + 1))
	out=$(env "$@" LD_PRELOAD="$lib" "$reuse" counters 2>&1 >/dev/null)
	case $out in
	*"$want"*) echo "ok: $what: $want" ;;
	*) echo "FAIL: $what: no '$want' on stderr: $out"; fails=$((fails + 1)) ;;
	esac
}
says purge_max_pending:-1 "<jemalloc>: Out-of-range conf value: purge_max_pending:-1" \
	MALLOC_CONF="$held,purge_max_pending:-1"
says purge_max_call:-1 "<jemalloc>: Out-of-range conf value: purge_max_call:-1" \
	MALLOC_CONF="$held,purge_max_call:-1"
calls() { # WHAT EXPECTED_CALLS MESSAGE ENV...: the counters case's system
	# calls, and the one line jemalloc prints on stderr ("" for none)
	what=$1 want=$2 msg=$3
	shift 3
	runs=$((runs + 1))
	out=$(env "$@" LD_PRELOAD="$lib" "$reuse" counters 2>"$errf")
	err=$(cat "$errf")
	case $out in
	*" flushes, $want calls)") ;;
	*) echo "FAIL: $what: not $want calls: $out"; fails=$((fails + 1)); return ;;
	esac
	if [ "$err" = "$msg" ]; then
		echo "ok: $what: $out${msg:+; said '$msg'}"
	else
		echo "FAIL: $what: stderr '$err', not '$msg'"; fails=$((fails + 1))
	fi
}
# 10 MiB pending in fewer than 128 ranges: one call, or one a range
calls process_madvise_max_batch:5000 1 "" MALLOC_CONF="$held,process_madvise_max_batch:5000"
calls PURGE_BATCH=1 1 "<jemalloc>: PURGE_BATCH does not apply; the batch is process_madvise_max_batch" \
	MALLOC_CONF="$held" PURGE_BATCH=1
calls PURGE_MODE=sideways 1 "<jemalloc>: PURGE_MODE is not auto, vectored or loop; ignored" \
	MALLOC_CONF="$held" PURGE_MODE=sideways
# with libpurge off, its knobs are not looked at
runs=$((runs + 1))
out=$(PURGE_MODE=sideways PURGE_BATCH=1 LD_PRELOAD=$lib MALLOC_CONF=$held,libpurge:false \
	"$reuse" canaries 2>"$errf")
err=$(cat "$errf")
case $out in
"canaries: ok"*) [ -z "$err" ] && echo "ok: libpurge:false, PURGE_*: nothing said" ||
	{ echo "FAIL: libpurge:false, PURGE_*: '$err'"; fails=$((fails + 1)); } ;;
*) echo "FAIL: libpurge:false, PURGE_*: $out $err"; fails=$((fails + 1)) ;;
esac
runs=$((runs + 1))
out=$(PURGE_MODE=loop LD_PRELOAD=$lib MALLOC_CONF=$held "$reuse" counters 2>&1)
case $out in
*"<jemalloc>"* | *" flushes, 1 calls)") echo "FAIL: PURGE_MODE=loop: $out"; fails=$((fails + 1)) ;;
*) echo "ok: PURGE_MODE=loop applies (not one vectored call): $out" ;;
esac
echo "$((runs - fails))/$runs passed"
[ $fails -eq 0 ]
