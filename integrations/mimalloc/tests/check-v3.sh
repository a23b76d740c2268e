#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-v3.sh [-w WORKDIR] [-s SOURCE] [-j JOBS] [-b BUILD] [-C]: mimalloc 3.4.3 with the
# batched purge series (../patches/3.4.3) against the same source unpatched.
# Builds both with ../build.sh --v3 [--stock] into WORKDIR (default
# integrations-build/mimalloc-v3-check; a build is kept while build.sh,
# the patches and the source are unchanged), then runs mimalloc's own
# CTest suite in each: stock has 4 tests (api, api-fill, stress,
# stress-dynamic), the patched build one more (purge-batch, the series'
# own).  Every test must pass in both, and the patched build must have
# stock's tests and its own.
# Then (unless -C: CTest only) our own checks of what the 2.0.9 series
# promised, under the preloaded libraries, with the programs of BUILD (the
# integrations' meson build, default integrations-build/meson; built here
# when missing):
#   idle      tests/idle.c: 320 MiB freed at once or 2 ms apart, 1 s idle,
#             at purge_delay 0 and 1000: patched RSS <= stock's + 4 MiB
#             (stock's own idle RSS varies by 2 MiB from run to run);
#             + 36 MiB (a batch, 32 MiB, and 4) for the burst at delay 0:
#             what was freed since the batch was last purged waits, as the
#             program makes no call after it
#   fork      forkhang child-malloc and lock-order (atfork handlers of
#             another library first; no hang), fork-storm; and the
#             patched library imports no pthread_atfork (stock has none)
#   options   purge_batch_size set with mi_option_set in the program's main
#             (tests/idle.c, the library preloaded) bounds what waits at
#             purge_delay 0 under MIMALLOC_PURGE_BATCH_SIZE=0 (no limit):
#             idle RSS <= stock's + 4 MiB
#   knobs     MIMALLOC_PURGE_BATCH=5000 and 0 warn (with
#             MIMALLOC_SHOW_ERRORS=1); invalid values warn as mimalloc's
#             own options do
#   calloc    ebizzy-lite -V -z (every record and canary checked, calloc
#             checked zero) at purge_delay 0 and 1000 and purge_batch=1
#   reuse     tests/reuse.c zero, live and fork at purge_delay 0 and 1000:
#             memory freed by exiting threads is calloc'ed zero, canaries
#             next to purged ranges survive a forced collect and a page-out,
#             and children of a fork amid allocating threads reuse, collect
#             and check theirs
#   stats     mi3-stall under strace: the process_madvise calls strace
#             counts are the '-vectored' line of mi_stats_print, and the
#             madvise calls cover the rest of '-calls'
#   fallback  test-purge-batch with process_madvise failing ENOSYS or EPERM
#             (strace's fault injection): the madvise loop takes over
#   bun       mi3-stall --b collect: a forced collect that meets another
#             thread's purge pass is not skipped: 300 ms later at most
#             16 MiB more is resident than after uncontended collects
#   debug     the series built with build.sh --debug (MI_DEBUG_FULL: every
#             invariant and bitmap assertion checked): test-purge-batch, and
#             test-stress-dynamic 4 20 4 three times, at purge_delay 0 and
#             1000 (a first version of patch 0010 cleared purge bits that
#             were not all set: this aborts in 0.1 s at delay 0)
# Options set in main are honoured: test-purge-batch (CTest) sets them with
# mi_option_set in its main and checks their effect.
# SOURCE: a mimalloc 3.4.3 tree or tarball (default: build.sh's,
# ../shared/sources/mimalloc-3.4.3.tar.xz).
# Exit status: 0 all passed; 1 a build or a test failed; 2 bad usage;
# 77 no source or no cmake (skipped).
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
build_sh=$here/../build.sh
work=$repo/integrations-build/mimalloc-v3-check source="" jobs=${JOBS:-2}
mbuild=$repo/integrations-build/meson own=1
while getopts w:s:j:b:Ch opt; do
	case $opt in
	w) work=$OPTARG ;;
	s) source=$OPTARG ;;
	j) jobs=$OPTARG ;;
	b) mbuild=$OPTARG ;;
	C) own=0 ;;
	h) sed -n '3,48p' "$0"; exit 0 ;;
	*) exit 2 ;;
	esac
done
command -v cmake >/dev/null && command -v ctest >/dev/null || { echo "SKIP: no cmake/ctest"; exit 77; }
mkdir -p "$work" && work=$(cd "$work" && pwd) || exit 1
fail=0

# build VARIANT [--stock]: $lib and $bdir, rebuilt only when an input changed
build() {
	local v=$1 stamp rc=0 out
	shift
	local src=()
	[ -n "$source" ] && src=(--source "$source")
	stamp=$( (cat "$build_sh" "$here"/../patches/3.4.3/*; echo "$source";
		[ -n "$source" ] && [ -f "$source" ] && stat -c %s.%Y "$source") | md5sum | cut -c1-16)
	bdir=$work/$v/build
	lib=$(ls "$bdir"/libmimalloc*.so.3 2>/dev/null | head -1)
	if [ -n "$lib" ] && [ "$(cat "$work/$v/stamp" 2>/dev/null)" = "$stamp" ]; then
		return 0
	fi
	out=$("$build_sh" --v3 "$@" ${src[@]+"${src[@]}"} -j "$jobs" --out "$work" 2>"$work/build-$v.err") || rc=$?
	if [ $rc = 77 ]; then
		echo "SKIP: mimalloc 3.4.3 cannot be built here: $(tail -1 "$work/build-$v.err")"
		exit 77
	elif [ $rc != 0 ]; then
		echo "FAIL: build.sh --v3 $* failed:"
		cat "$work/build-$v.err"
		exit 1
	fi
	lib=$(tail -1 <<<"$out")
	echo "$stamp" >"$work/$v/stamp"
}

# ctest_in VARIANT: run mimalloc's CTest suite; prints one line per test and
# sets $passed, $total and $names
ctest_in() {
	local v=$1 log=$work/ctest-$1.log
	local t0=$SECONDS
	(cd "$work/$v/build" && ctest --output-on-failure --timeout 600) >"$log" 2>&1
	passed=$(grep -c ' Passed ' "$log")
	total=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#' "$log")
	names=$(grep -oE 'Test +#[0-9]+: [^ ]+' "$log" | awk '{print $3}' | sort | tr '\n' ' ')
	printf '%-8s ctest: %d/%d passed in %d s (%s)\n' "$v" "$passed" "$total" $((SECONDS - t0)) "$names"
	if [ "$passed" != "$total" ] || [ "$total" = 0 ]; then
		grep -E 'Failed|\*\*\*|FAILED' "$log" | head -20 | sed 's/^/    /'
		fail=1
	fi
}

build v3-stock --stock
stock_lib=$lib
build v3-patched
patched_lib=$lib
ctest_in v3-stock
stock_names=$names stock_total=$total
ctest_in v3-patched
for n in $stock_names; do
	case " $names " in *" $n "*) ;; *) echo "FAIL: the patched build lacks stock's test $n"; fail=1 ;; esac
done
case " $names " in *" test-purge-batch "*) ;; *) echo "FAIL: the patched build has no test-purge-batch"; fail=1 ;; esac
[ "$total" -gt "$stock_total" ] || { echo "FAIL: patched runs $total tests, stock $stock_total"; fail=1; }

# ---- our own checks
# check LABEL CMD...: one line, "ok" or "FAIL(rc)" with the end of its output
check() {
	local label=$1 rc=0
	shift
	if declare -F "$1" >/dev/null; then # one of ours: in a bash of its own, under the timeout
		timeout 300 bash -c '"$@"' bash "$@" >"$work/last.log" 2>&1 || rc=$?
	else
		timeout 300 "$@" >"$work/last.log" 2>&1 || rc=$?
	fi
	if [ $rc = 0 ]; then
		printf '  %-62s ok\n' "$label"
	else
		printf '  %-62s FAIL(%d)\n' "$label" $rc
		tail -5 "$work/last.log" | sed 's/^/      /'
		fail=1
	fi
}

debug_stress() { # DELAY: the debug build's stress test, preloaded as CTest runs it
	local i
	for i in 1 2 3; do
		MIMALLOC_PURGE_DELAY=$1 LD_PRELOAD="$debug_lib" \
			"$work/v3-patched-debug/build/mimalloc-test-stress-dynamic" 4 20 4 || return 1
	done
}

idle_bounded() { # DELAY GAP KIB: patched idle RSS <= stock's + KIB
	local s p
	s=$(MIMALLOC_PURGE_DELAY=$1 LD_PRELOAD=$stock_lib "$idle" -g "$2" | awk '{print $NF}')
	p=$(MIMALLOC_PURGE_DELAY=$1 LD_PRELOAD=$patched_lib "$idle" -g "$2" | awk '{print $NF}')
	echo "idle KiB: stock $s patched $p (allowed: stock + $3)"
	[ -n "$s" ] && [ -n "$p" ] && [ "$p" -le $((s + $3)) ]
}

option_from_main() { # purge_batch_size=1024 set in main: idle RSS at delay 0 <= stock's + 4 MiB
	local s p
	s=$(MIMALLOC_PURGE_DELAY=0 LD_PRELOAD=$stock_lib "$idle" | awk '{print $NF}')
	p=$(MIMALLOC_PURGE_DELAY=0 MIMALLOC_PURGE_BATCH_SIZE=0 LD_PRELOAD=$patched_lib "$idle" "$@" | awk '{print $NF}')
	echo "idle KiB: stock $s, patched ($*, set in main) $p"
	[ -n "$s" ] && [ -n "$p" ] && [ "$p" -le $((s + 4096)) ]
}

no_atfork() {
	! nm -D --undefined-only "$patched_lib" | grep -q pthread_atfork
}

warns() { # EXPECTED ENV...: the warning is printed
	local want=$1
	shift
	# (at purge_delay 0 the frees purge a batch, which reads the options)
	env MIMALLOC_SHOW_ERRORS=1 MIMALLOC_PURGE_DELAY=0 "$@" LD_PRELOAD="$patched_lib" "$idle" -m 64 -s 0 2>&1 | tee /dev/stderr | grep -qF "$want"
}

stats_truthful() { # the strace counts are the counters
	local t=$work/strace.txt out pm m vec calls
	out=$(MIMALLOC_SHOW_STATS=1 LD_PRELOAD=$patched_lib strace -f -c -o "$t" -e trace=madvise,process_madvise \
		"$stall" --b none --fill 256 --repeat 2 2>&1)
	pm=$(awk '$NF == "process_madvise" {print $4}' "$t")
	m=$(awk '$NF == "madvise" {print $4}' "$t")
	vec=$(awk '$1 == "-vectored" {print $3}' <<<"$out")
	calls=$(awk '$1 == "-calls" {print $3}' <<<"$out")
	echo "strace: ${pm:-0} process_madvise, ${m:-0} madvise; stats: -calls $calls, -vectored $vec"
	[ -n "$vec" ] && [ "${pm:-0}" = "$vec" ] && [ $((calls - vec)) -le "${m:-0}" ]
}

bun_not_skipped() { # rss_later - rss_ref <= 16 MiB in every repeat
	LD_PRELOAD=$patched_lib "$stall" --b collect --fill 512 --repeat 3 --csv | tee /dev/stderr |
		awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; if (!col["rss_ref_mib"]) exit 2; next }
			{ if ($col["rss_later_mib"] - $col["rss_ref_mib"] > 16) bad++ } END { exit bad > 0 }'
}

if [ $own = 1 ]; then
	if [ ! -f "$mbuild/build.ninja" ]; then
		meson setup "$mbuild" "$repo/integrations" >"$work/meson-setup.log" 2>&1 ||
			{ echo "FAIL: meson setup $mbuild"; tail -5 "$work/meson-setup.log"; exit 1; }
	fi
	ninja -C "$mbuild" mimalloc/mimalloc-idle mimalloc/mimalloc-forkhang mimalloc/mimalloc-reuse workloads/ebizzy-lite \
		workloads/fork-storm workloads/mi3-stall >"$work/ninja.log" 2>&1 ||
		{ echo "FAIL: ninja"; tail -5 "$work/ninja.log"; exit 1; }
	idle=$mbuild/mimalloc/mimalloc-idle forkhang=$mbuild/mimalloc/mimalloc-forkhang reuse=$mbuild/mimalloc/mimalloc-reuse
	ebizzy=$mbuild/workloads/ebizzy-lite forkstorm=$mbuild/workloads/fork-storm stall=$mbuild/workloads/mi3-stall
	export work stock_lib patched_lib idle stall
	export -f idle_bounded option_from_main no_atfork warns stats_truthful bun_not_skipped debug_stress
	t0=$SECONDS
	echo "own checks (patched v3 preloaded; stock for comparisons):"
	for d in 0 1000; do
		for g in 0 2; do
			# frees 2 ms apart: a free that retires a page finds the batch paused
			# (1 ms) and purges it; the last frees are of small blocks (patch 0008)
			k=4096
			[ $d = 0 ] && [ $g = 0 ] && k=36864
			check "idle: purge_delay $d, frees $g ms apart, <= stock + $((k / 1024)) MiB" idle_bounded $d $g $k
		done
	done
	check "options: purge_batch_size=1024 set in main bounds idle RSS" option_from_main purge_batch_size=1024
	for m in child-malloc lock-order; do
		for d in 0 1000; do
			check "fork: forkhang $m, purge_delay $d" env MIMALLOC_PURGE_DELAY=$d LD_PRELOAD="$patched_lib" "$forkhang" $m 60
		done
	done
	check "fork: fork-storm -t 4 -n 50, purge_delay 0" env MIMALLOC_PURGE_DELAY=0 LD_PRELOAD="$patched_lib" "$forkstorm" -t 4 -n 50
	check "fork: no pthread_atfork in the patched library" no_atfork
	check "knobs: MIMALLOC_PURGE_BATCH=5000 warns" warns "option 'purge_batch' is 5000 but must be between 1 and 1024" MIMALLOC_PURGE_BATCH=5000
	check "knobs: MIMALLOC_PURGE_BATCH=0 warns" warns "option 'purge_batch' is 0" MIMALLOC_PURGE_BATCH=0
	check "knobs: MIMALLOC_PURGE_BATCH=many warns (invalid)" warns "mimalloc_purge_batch has an invalid value" MIMALLOC_PURGE_BATCH=many
	check "knobs: MIMALLOC_PURGE_BATCH_SIZE=1X warns (invalid)" warns "mimalloc_purge_batch_size has an invalid value" MIMALLOC_PURGE_BATCH_SIZE=1X
	for e in "MIMALLOC_PURGE_DELAY=0" "MIMALLOC_PURGE_DELAY=1000" "MIMALLOC_PURGE_DELAY=0 MIMALLOC_PURGE_BATCH=1"; do
		read -ra ev <<<"$e"
		check "calloc: ebizzy-lite -V -z -t 2, $e" env "${ev[@]}" LD_PRELOAD="$patched_lib" "$ebizzy" -V -z -t 2 -n 300 -s 3M
	done
	for m in zero live fork; do
		for d in 0 1000; do
			check "reuse: reuse $m, purge_delay $d" env MIMALLOC_PURGE_DELAY=$d LD_PRELOAD="$patched_lib" "$reuse" $m
		done
	done
	if command -v strace >/dev/null; then
		check "stats: strace's calls are the counters" stats_truthful
		# the kernel refuses process_madvise (strace injects the error): madvise per range
		for e in ENOSYS EPERM; do
			check "fallback: test-purge-batch with process_madvise failing $e" \
				strace -f -o /dev/null -e trace=process_madvise -e inject=process_madvise:error=$e \
				"$work/v3-patched/build/mimalloc-test-purge-batch"
		done
	else
		echo "  SKIP: stats and fallback (no strace)"
	fi
	check "bun: a forced collect during another's pass is not skipped" bun_not_skipped
	build v3-patched-debug --debug
	debug_lib=$lib; export debug_lib
	for d in 0 1000; do
		check "debug: test-purge-batch, purge_delay $d" \
			env MIMALLOC_PURGE_DELAY=$d "$work/v3-patched-debug/build/mimalloc-test-purge-batch"
		check "debug: test-stress-dynamic 4 20 4 (3 runs), purge_delay $d" debug_stress $d
	done
	echo "own checks: $((SECONDS - t0)) s"
fi
[ $fail = 0 ] && echo "check-v3: OK" || echo "check-v3: FAILED"
exit $fail
