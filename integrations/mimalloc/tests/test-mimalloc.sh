#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-mimalloc.sh MODE WORKDIR [REUSE EBIZZY_LITE FORK_STORM IDLE FORKHANG]
# The patched mimalloc 2.0.9 against the same source unpatched (stock),
# both built by ../build.sh into WORKDIR (kept there between runs: a build
# is redone when the patches, build.sh or libpurge change).
#   upstream  mimalloc's own test-api, test-api-fill and test-stress, stock
#             and patched, with the options at their defaults and at their
#             extremes: the patched results must be the stock ones
#   asan      the same under MI_ASAN=ON (-fsanitize=address; a Debug build,
#             so mimalloc's internal assertions are on too), fewer settings
#   own       our tests under the patched library: reuse zero|live|fork
#             (tests/reuse.c), ebizzy-lite -V -z (records, canaries and
#             calloc checked), fork-storm, and the counters in
#             mi_stats_print (the queue is really in use, and off with
#             MIMALLOC_LIBPURGE=0); forkhang (fork with atfork handlers
#             registered before mimalloc's: no hang); mi_option_set in
#             main (tests/idle.c)
# Skips (77) unless MIMALLOC_TESTS=1 (the builds take a minute: CI runs
# them in their own stage, .ci/check-mimalloc.sh), and where the source or
# cmake is not available.  The source: $MIMALLOC_SOURCE (a tree or the
# .orig tarball), else Debian's through integrations/common/debian-source.sh.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build_sh=$here/../build.sh
[ $# -ge 2 ] || { echo "usage: $0 upstream|asan|own WORKDIR [REUSE EBIZZY_LITE FORK_STORM]" >&2; exit 2; }
mode=$1 work=$2
reuse=${3:-} ebizzy=${4:-} forkstorm=${5:-} idle=${6:-} forkhang=${7:-}
if [ "${MIMALLOC_TESTS:-0}" != 1 ]; then
	echo "SKIP: the mimalloc builds are off; MIMALLOC_TESTS=1 turns them on (.ci/check-mimalloc.sh does)"
	exit 77
fi
command -v cmake >/dev/null || { echo "SKIP: no cmake"; exit 77; }
mkdir -p "$work"
work=$(cd "$work" && pwd)
results=$work/results-$mode.txt
: >"$results"
fail=0

# build VARIANT ARGS...: the library's path in $lib; exits 77 without source
build() {
	local v=$1
	shift
	local stamp
	# what the build depends on: the script, the patches, libpurge's sources
	stamp=$(cat "$here/../build.sh" "$here"/../patches/2.0.9/* "$here"/../../../src/*.[ch] \
		"$here/../../../include/purge.h" | md5sum | cut -c1-16)
	lib=$(ls "$work/$v"/build/libmimalloc*.so.2 2>/dev/null | head -1)
	if [ -n "$lib" ] && [ "$(cat "$work/$v/stamp" 2>/dev/null)" = "$stamp" ]; then
		return 0
	fi
	local src=() rc=0 out
	[ -n "${MIMALLOC_SOURCE:-}" ] && src=(--source "$MIMALLOC_SOURCE")
	out=$("$build_sh" "${src[@]}" "$@" --out "$work" 2>"$work/build-$v.err") || rc=$?
	if [ $rc = 77 ]; then
		echo "SKIP: mimalloc 2.0.9 could not be built here: $(tail -1 "$work/build-$v.err")"
		exit 77
	elif [ $rc != 0 ]; then
		echo "FAIL: build.sh $* failed:"
		cat "$work/build-$v.err"
		exit 1
	fi
	lib=$(tail -1 <<<"$out")
	echo "$stamp" >"$work/$v/stamp"
}

# run LABEL CMD...: one line of the results, "ok" or "FAIL(rc)"
run() {
	local label=$1
	shift
	local rc=0
	timeout 300 "$@" >"$work/last.log" 2>&1 || rc=$?
	if [ $rc = 0 ]; then
		printf '%-44s ok\n' "$label" | tee -a "$results"
	else
		printf '%-44s FAIL(%d)\n' "$label" "$rc" | tee -a "$results"
		tail -5 "$work/last.log" | sed 's/^/    /'
	fi
	return $rc
}

# the settings mimalloc's tests run under: defaults, then the extremes
# (a trailing " *": test-api runs there too)
configs=(
	"defaults *"
	"MIMALLOC_DECOMMIT_DELAY=0 *"
	"MIMALLOC_DECOMMIT_DELAY=1000"
	"MIMALLOC_DECOMMIT_DELAY=0 MIMALLOC_PURGE_BATCH=1 *"
	"MIMALLOC_DECOMMIT_DELAY=0 MIMALLOC_PURGE_BATCH=1024 MIMALLOC_PURGE_MAX_DELAY=1000 MIMALLOC_PURGE_MAX_PENDING=0"
	"MIMALLOC_DECOMMIT_DELAY=0 MIMALLOC_PURGE_MAX_DELAY=0"
	"MIMALLOC_DECOMMIT_DELAY=0 MIMALLOC_PURGE_MAX_PENDING=1M"
	"MIMALLOC_DECOMMIT_DELAY=0 MIMALLOC_PAGE_RESET=1"
	"MIMALLOC_LIBPURGE=0 *"
)

# upstream_tests BUILDDIR_STOCK BUILDDIR_PATCHED TAG: each test and config
# on both; a patched result that differs from stock's is a failure
upstream_tests() {
	local sdir=$1 pdir=$2 tag=$3 c t env rs rp
	for c in "${configs[@]}"; do
		env=()
		[ "${c%' *'}" = defaults ] || read -ra env <<<"${c%' *'}"
		for t in api api-fill "stress 4 20 4"; do
			# test-api spends seconds in malloc-aligned8 (alignments up to
			# 256 MiB): at the settings marked *, not at every one
			[[ $t != api || $c == *'*' ]] || continue
			read -ra cmd <<<"mimalloc-test-$t"
			# stock and patched side by side (2 CPUs)
			(
				cd "$sdir" && env "${env[@]}" timeout 300 "./${cmd[0]}" "${cmd[@]:1}" >"$work/s.log" 2>&1
				echo $? >"$work/s.rc"
			) &
			(
				cd "$pdir" && env "${env[@]}" timeout 300 "./${cmd[0]}" "${cmd[@]:1}" >"$work/p.log" 2>&1
				echo $? >"$work/p.rc"
			) &
			wait
			rs=$(cat "$work/s.rc") rp=$(cat "$work/p.rc")
			local verdict=same
			if [ $rs != $rp ]; then
				verdict=DIFFERENT
				fail=1
				tail -5 "$work/p.log" | sed 's/^/    patched: /'
			fi
			printf '%-6s %-14s %-72s stock %-3s patched %-3s %s\n' "$tag" "${t%% *}" "${c%' *'}" "$rs" "$rp" "$verdict" |
				tee -a "$results"
		done
	done
}

case $mode in
asan)
	# a Debug build: mimalloc's internal assertions (MI_DEBUG=2) are on too
	configs=("defaults *" "MIMALLOC_DECOMMIT_DELAY=0 *" "MIMALLOC_DECOMMIT_DELAY=0 MIMALLOC_PURGE_BATCH=1 *"
		"MIMALLOC_DECOMMIT_DELAY=0 MIMALLOC_PAGE_RESET=1 *" "MIMALLOC_LIBPURGE=0 *")
	;;
esac
case $mode in
upstream)
	build stock --stock
	stock=$(dirname "$lib")
	build patched
	patched=$(dirname "$lib")
	upstream_tests "$stock" "$patched" release
	;;
asan)
	build stock-asan --stock --asan
	stock=$(dirname "$lib")
	build patched-asan --asan
	patched=$(dirname "$lib")
	upstream_tests "$stock" "$patched" asan
	;;
own)
	[ -x "$reuse" ] || { echo "usage: $0 own WORKDIR REUSE EBIZZY_LITE FORK_STORM IDLE FORKHANG" >&2; exit 2; }
	build stock --stock
	s=$lib
	build patched
	p=$lib
	# purges stay queued for a second, with no pending limit: what is
	# reused was still pending
	q=(MIMALLOC_DECOMMIT_DELAY=0 MIMALLOC_PURGE_MAX_DELAY=1000 MIMALLOC_PURGE_MAX_PENDING=0)
	for m in zero live unmap fork; do
		run "reuse $m" env "${q[@]}" LD_PRELOAD="$p" "$reuse" $m || fail=1
	done
	# flushes all the time, one range a call: a fork often finds the queue's lock taken
	run "reuse fork, max delay 0, batch 1" env MIMALLOC_DECOMMIT_DELAY=0 MIMALLOC_PURGE_MAX_DELAY=0 \
		MIMALLOC_PURGE_BATCH=1 LD_PRELOAD="$p" "$reuse" fork || fail=1
	run "reuse live, batch 1" env "${q[@]}" MIMALLOC_PURGE_BATCH=1 LD_PRELOAD="$p" "$reuse" live || fail=1
	run "reuse live, page_reset, decommit 1 s" env MIMALLOC_DECOMMIT_DELAY=1000 MIMALLOC_PURGE_MAX_DELAY=1000 MIMALLOC_PURGE_MAX_PENDING=0 MIMALLOC_PAGE_RESET=1 LD_PRELOAD="$p" "$reuse" live || fail=1
	run "reuse live, max delay 0" env MIMALLOC_DECOMMIT_DELAY=0 MIMALLOC_PURGE_MAX_DELAY=0 LD_PRELOAD="$p" "$reuse" live || fail=1
	if [ -x "$ebizzy" ]; then
		run "ebizzy-lite -V -z -t 2" env "${q[@]}" LD_PRELOAD="$p" "$ebizzy" -V -z -t 2 -n 300 -s 3M || fail=1
		run "ebizzy-lite -V -g -t 2, page_reset" env "${q[@]}" MIMALLOC_PAGE_RESET=1 LD_PRELOAD="$p" \
			"$ebizzy" -V -g -t 2 -n 300 -s 1M || fail=1
	fi
	if [ -x "$forkstorm" ]; then
		run "fork-storm -t 4 -n 50" env "${q[@]}" LD_PRELOAD="$p" "$forkstorm" -t 4 -n 50 || fail=1
	fi
	# fork with atfork handlers registered before mimalloc's (a library the
	# program links): a child handler that mallocs, and a prepare handler
	# that takes a lock a thread holds around malloc; the program's alarm
	# (30 s) ends a hang.  Stock runs both in about a second on 2 CPUs.
	if [ -x "$forkhang" ]; then
		for m in child-malloc lock-order; do
			run "forkhang $m" env MIMALLOC_DECOMMIT_DELAY=0 LD_PRELOAD="$p" "$forkhang" $m 60 || fail=1
			run "forkhang $m, max delay 0, batch 1" env MIMALLOC_DECOMMIT_DELAY=0 MIMALLOC_PURGE_MAX_DELAY=0 \
				MIMALLOC_PURGE_BATCH=1 LD_PRELOAD="$p" "$forkhang" $m 60 || fail=1
		done
	fi
	if [ -x "$idle" ]; then
		# a burst of 320 MiB of frees (at once, or 2 ms apart), then 1 s
		# idle: the patched library may keep at most 16 MiB more resident
		# than stock (purge_max_pending, 8 MiB by default, bounds the queue)
		for d in 0 default 1000; do
			for g in 0 2; do
				env=("MIMALLOC_DECOMMIT_DELAY=$d")
				[ $d = default ] && env=()
				env "${env[@]}" LD_PRELOAD="$s" "$idle" -g $g >"$work/idle-s.log" 2>&1 &
				env "${env[@]}" LD_PRELOAD="$p" "$idle" -g $g >"$work/idle-p.log" 2>&1 &
				wait
				rs=$(sed -n 's/.* idle \([0-9]*\)$/\1/p' "$work/idle-s.log")
				rp=$(sed -n 's/.* idle \([0-9]*\)$/\1/p' "$work/idle-p.log")
				label="idle RSS, decommit delay $d, gap $g ms"
				if [ -n "$rs" ] && [ -n "$rp" ] && [ "$rp" -le $((rs + 16384)) ]; then
					printf '%-44s ok (stock %s KiB, patched %s KiB)\n' "$label" "$rs" "$rp" | tee -a "$results"
				else
					printf '%-44s FAIL: stock %s KiB, patched %s KiB\n' "$label" "${rs:-?}" "${rp:-?}" | tee -a "$results"
					fail=1
				fi
			done
		done
		# mi_option_set in main, before the first allocation, counts
		out=$(MIMALLOC_SHOW_STATS=1 MIMALLOC_DECOMMIT_DELAY=0 LD_PRELOAD="$p" "$idle" -m 64 -s 10 libpurge=0 2>&1)
		if grep -aq '^ *libpurge:' <<<"$out"; then
			printf '%-44s FAIL: a queue after mi_option_set(mi_option_libpurge, 0)\n' "mi_option_set libpurge=0" | tee -a "$results"
			fail=1
		else
			printf '%-44s ok (no queue)\n' "mi_option_set libpurge=0" | tee -a "$results"
		fi
		# the stock library's idle RSS after the same burst, at delay 0
		stock_idle=$(MIMALLOC_DECOMMIT_DELAY=0 LD_PRELOAD="$s" "$idle" | sed -n 's/.* idle \([0-9]*\)$/\1/p')
		# no limit from the environment, 4 MiB from mi_option_set
		got=$(MIMALLOC_DECOMMIT_DELAY=0 MIMALLOC_PURGE_MAX_PENDING=0 LD_PRELOAD="$p" "$idle" purge_max_pending=4096 |
			sed -n 's/.* idle \([0-9]*\)$/\1/p')
		if [ -n "$got" ] && [ -n "$stock_idle" ] && [ "$got" -le $((stock_idle + 16384)) ]; then
			printf '%-44s ok (idle RSS %s KiB, stock %s KiB)\n' "mi_option_set purge_max_pending=4096" "$got" "$stock_idle" | tee -a "$results"
		else
			printf '%-44s FAIL: idle RSS %s KiB, stock %s KiB\n' "mi_option_set purge_max_pending=4096" "${got:-?}" "${stock_idle:-?}" | tee -a "$results"
			fail=1
		fi
	fi
	if [ -x "$idle" ]; then
		# the knobs: what the libpurge line says is in use, and the warnings
		# (shown with MIMALLOC_SHOW_ERRORS=1, as mimalloc's own)
		# knob LABEL PATTERN [NOWARN] -- ENV... [-- IDLE_ARGS...]: PATTERN (grep -E)
		# is in the output; with NOWARN, no warning is
		knob() {
			local label=$1 pat=$2 nowarn=0 e=() a=()
			shift 2
			[ "$1" = NOWARN ] && { nowarn=1; shift; }
			shift
			while [ $# -gt 0 ] && [ "$1" != -- ]; do e+=("$1"); shift; done
			[ $# -gt 0 ] && { shift; a=("$@"); }
			local o
			o=$(env "${e[@]}" MIMALLOC_SHOW_STATS=1 MIMALLOC_SHOW_ERRORS=1 MIMALLOC_DECOMMIT_DELAY=0 \
				LD_PRELOAD="$p" "$idle" -m 32 -s 10 "${a[@]}" 2>&1)
			if grep -aEq "$pat" <<<"$o" && { [ $nowarn = 0 ] || ! grep -aq 'warning' <<<"$o"; }; then
				printf '%-44s ok\n' "$label" | tee -a "$results"
			else
				printf '%-44s FAIL: %s\n' "$label" "$(grep -a 'warning\|libpurge:' <<<"$o" | tr '\n' ' ')" | tee -a "$results"
				fail=1
			fi
		}
		knob "defaults" "batch 1024, max delay 10 ms, max pending 8192 KiB" NOWARN --
		knob "MIMALLOC_PURGE_BATCH=0: libpurge's default" "batch 1024," NOWARN -- MIMALLOC_PURGE_BATCH=0
		knob "MIMALLOC_PURGE_BATCH=5000 warns" "warning: option 'purge_batch' is 5000" -- MIMALLOC_PURGE_BATCH=5000
		knob "MIMALLOC_PURGE_BATCH=-1 warns" "warning: option 'purge_batch' is -1" -- MIMALLOC_PURGE_BATCH=-1
		knob "MIMALLOC_PURGE_MAX_DELAY=-1 warns" "warning: option 'purge_max_delay' is -1" -- MIMALLOC_PURGE_MAX_DELAY=-1
		knob "PURGE_BATCH=7 applies" "batch 7," NOWARN -- PURGE_BATCH=7
		knob "PURGE_BATCH=7, MIMALLOC_PURGE_BATCH=9 warns" "warning: PURGE_BATCH=7 is not used" -- PURGE_BATCH=7 MIMALLOC_PURGE_BATCH=9
		knob "PURGE_BATCH=0 warns" "warning: PURGE_BATCH=0 is not 1..1024" -- PURGE_BATCH=0
		knob "PURGE_MODE=loop applies" "\(0 process_madvise, [1-9][0-9]* madvise\)" NOWARN -- PURGE_MODE=loop
		knob "PURGE_MODE=bogus warns" "warning: PURGE_MODE=bogus is not" -- PURGE_MODE=bogus
		knob "mi_option_set batch, max delay, max pending" "batch 7, max delay 123 ms, max pending 4096 KiB" NOWARN -- \
			-- purge_batch=7 purge_max_delay=123 purge_max_pending=4096
	fi
	# the counters: the queue takes the decommits, in fewer calls than ranges
	out=$(MIMALLOC_SHOW_STATS=1 MIMALLOC_DECOMMIT_DELAY=0 LD_PRELOAD="$p" "$reuse" live 2>&1)
	line=$(grep -a '^ *libpurge:' <<<"$out" | head -1)
	read -r ranges calls < <(sed -n 's/.*libpurge: \([0-9]*\) ranges.* \([0-9]*\) calls.*/\1 \2/p' <<<"$line")
	if [ -n "${ranges:-}" ] && [ "$ranges" -gt 0 ] && [ "$calls" -lt "$ranges" ]; then
		printf '%-44s ok (%s ranges in %s calls)\n' "counters in mi_stats_print" "$ranges" "$calls" | tee -a "$results"
	else
		printf '%-44s FAIL: %s\n' "counters in mi_stats_print" "${line:-no libpurge line}" | tee -a "$results"
		fail=1
	fi
	out=$(MIMALLOC_SHOW_STATS=1 MIMALLOC_LIBPURGE=0 MIMALLOC_DECOMMIT_DELAY=0 LD_PRELOAD="$p" "$reuse" live 2>&1)
	if grep -aq '^ *libpurge:' <<<"$out"; then
		printf '%-44s FAIL: a queue with MIMALLOC_LIBPURGE=0\n' "MIMALLOC_LIBPURGE=0" | tee -a "$results"
		fail=1
	else
		printf '%-44s ok (no queue)\n' "MIMALLOC_LIBPURGE=0" | tee -a "$results"
	fi
	;;
*)
	echo "unknown mode $mode" >&2
	exit 2
	;;
esac
echo "results: $results"
exit $fail
