#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run.sh: jemalloc 5.3.1's whole `make check` (check_unit,
# check_integration, check_integration_decay, check_integration_prof), one
# build per MODE, each built by integrations/jemalloc/build.sh into
# WORK/MODE with the configure options below:
#   patched        the series, build.sh's default configure options
#   patched-debug  the series, the same options plus --enable-debug
#                  (assertions and the witness lock-order checker)
#   stock, stock-debug   the same without the series (build.sh --stock)
# For each: the build's and the check's wall time, the load before and
# after, the check's log (MODE.log: every failure or harness error with the
# 8 lines before it, then the "Test suite summary" lines) and one line in
# summary.txt:
#   MODE pass P skip S fail F check_wall_s W load_before L1 load_after L2
#
# usage: run.sh WORK OUTFOLDER MODE...   (from the repository's root)
set -u
work=$1 res=$2
shift 2
mkdir -p "$work" "$res"
base=(--with-lg-page=12 --with-lg-hugepage=21 --enable-prof
	--with-experimental-sys-process-madvise=440)
rc_all=0
for mode in "$@"; do
	args=(--jemalloc 5.3.1 --jobs 2)
	conf=("${base[@]}")
	case $mode in
	patched) ;;
	patched-debug) conf+=(--enable-debug) ;;
	stock) args+=(--stock) ;;
	stock-debug) args+=(--stock); conf+=(--enable-debug) ;;
	*) echo "run.sh: unknown mode $mode" >&2; exit 2 ;;
	esac
	out=$work/$mode
	t0=$SECONDS
	if ! integrations/jemalloc/build.sh "${args[@]}" -o "$out" -- "${conf[@]}" >"$res/$mode.build.log" 2>&1; then
		echo "$mode build failed" | tee -a "$res/summary.txt"
		rc_all=1
		continue
	fi
	tree=$out/jemalloc
	[ -d "$tree" ] || tree=$out/stock/jemalloc
	make -C "$tree" -j2 tests >"$res/$mode.tests-build.log" 2>&1 || { echo "$mode: building the tests failed" | tee -a "$res/summary.txt"; rc_all=1; continue; }
	build_s=$((SECONDS - t0))
	l1=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)
	t1=$SECONDS
	make -k -C "$tree" check >"$res/$mode.full.log" 2>&1
	rc=$?
	check_s=$((SECONDS - t1))
	l2=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)
	# the summaries and failures only: the full log is long
	grep -E -B8 '^(Test harness error|Test .*(failed|Failed)|.*Failed assertion)' "$res/$mode.full.log" >"$res/$mode.log"
	grep -E '^(Test suite summary|make.*Error)' "$res/$mode.full.log" >>"$res/$mode.log"
	rm -f "$res/$mode.full.log"
	read -r p s f < <(awk '/^Test suite summary:/ {
		sub(/.*pass: /, ""); split($0, a, "/"); p += a[1]
		sub(/.*skip: /, ""); split($0, b, "/"); s += b[1]
		sub(/.*fail: /, ""); split($0, c, "/"); f += c[1] }
		END { print p + 0, s + 0, f + 0 }' "$res/$mode.log")
	echo "$mode pass $p skip $s fail $f make_rc $rc build_s $build_s check_wall_s $check_s load_before $l1 load_after $l2" |
		tee -a "$res/summary.txt"
	[ "$rc" -eq 0 ] && [ "$f" -eq 0 ] || rc_all=1
done
exit $rc_all
