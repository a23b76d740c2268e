#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# make-check.sh: jemalloc's own test suite (unit, integration, stress) in a
# tree build.sh built, with its defaults and under MALLOC_CONF variants; one
# summary line per configuration and suite:
#   CONFIG SUITE pass P skip S fail F
#
# usage: make-check.sh [--quick] [--stock] [--jemalloc VERSION] [--tree TREE]
#                      [-j JOBS] [CONF...]
#   --quick   CI's cheap form: `make check` once with the defaults, then a
#             chosen subset of unit tests (QUICK_UNIT below) and all the
#             integration tests under each variant
#   --stock   the unpatched tree (build.sh --stock) instead of the patched one
#   --jemalloc VERSION  5.3.1, the only series (also $JEMALLOC_VERSION)
#   --tree    a built jemalloc tree (default: build.sh's, with its default
#             OUTDIR: integrations-build/jemalloc/jemalloc)
#   CONF...   the variants (default: VARIANTS below); "defaults" is the
#             literal `make check` plus `make stress`
# Exit status: 0 no test failed; 77 no built tree (the reason is printed);
# 1 a test failed or the harness broke.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
quick=0 tree="" jobs=2 sub="" jeversion=${JEMALLOC_VERSION:-5.3.1}
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1; shift ;;
	--stock) sub=stock/; shift ;;
	--jemalloc) jeversion=$2; shift 2 ;;
	--tree) tree=$2; shift 2 ;;
	-j) jobs=$2; shift 2 ;;
	-h | --help) sed -n '/^# usage:/,/^# 1 a test/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) break ;;
	esac
done
case $jeversion in
5.3.1) ;;
*) echo "make-check: --jemalloc: 5.3.1, not '$jeversion'" >&2; exit 2 ;;
esac
tree=${tree:-$repo/integrations-build/jemalloc/${sub}jemalloc}
if [ ! -f "$tree/Makefile" ]; then
	echo "SKIP: no configured jemalloc tree at $tree: run integrations/jemalloc/build.sh" \
		"(it needs jemalloc 5.3.1's source, or --source TREE|TARBALL)"
	exit 77
fi

# The variants: the decay extremes, the background thread, and the libpurge
# knobs at their extremes (process_madvise_max_batch, 5.3.1's own option, is
# the ranges one call purges: 128 is the most it takes; 0, its default, is
# libpurge's 1024) (a stock tree warns about the unknown options and
# runs the tests all the same: the same command for both).
# shellcheck disable=SC2054 # the commas are MALLOC_CONF's
VARIANTS=(
	dirty_decay_ms:0
	background_thread:true
	process_madvise_max_batch:1
	process_madvise_max_batch:128,purge_max_delay_ms:-1,purge_max_pending:0
	purge_max_delay_ms:0
	purge_max_delay_ms:100000000
	purge_max_pending:4096
	dirty_decay_ms:0,process_madvise_max_batch:1,purge_max_pending:4096
	libpurge:false
)
# --quick's variants: the decay extremes, the background thread, and the
# knobs at their extremes (smallest, then largest, together).
# shellcheck disable=SC2054
QUICK_VARIANTS=(
	dirty_decay_ms:0
	background_thread:true
	process_madvise_max_batch:1,purge_max_delay_ms:0,purge_max_pending:4096
	dirty_decay_ms:0,process_madvise_max_batch:128,purge_max_delay_ms:-1,purge_max_pending:0
)
# --quick's unit tests under the variants: the ones that exercise purging,
# reuse, zeroing, arenas and fork (the rest are data structures the patches
# do not touch).  arena_decay and decay count purges under the decay
# settings they pin, so a variant that overrides those fails them with or
# without the patches: they run with the defaults (make check) only.
QUICK_UNIT="arena_reset background_thread background_thread_enable extent_quantize
	fork junk mallctl oversize_threshold pa pack retained stats stats_print zero"
[ $quick -eq 1 ] && VARIANTS=("${QUICK_VARIANTS[@]}")
[ $# -gt 0 ] && VARIANTS=("$@")

cd "$tree" || exit 1
log=$(mktemp -d "${TMPDIR:-/tmp}/je-check.XXXXXX")
trap 'rm -rf "$log"' EXIT
targets=tests
[ $quick -eq 1 ] && targets="tests_unit tests_integration"
# shellcheck disable=SC2086 # a list of targets
if ! make -j"$jobs" $targets >"$log/build" 2>&1; then
	tail -20 "$log/build"
	echo "FAIL: building jemalloc's tests"
	exit 1
fi

list() { # SUITE -> the test programs of that suite
	local f
	for f in test/"$1"/*.c test/"$1"/cpp/*.cpp; do
		[ -e "$f" ] || continue
		f=${f%.c}
		f=${f%.cpp}
		[ -x "$f" ] && echo "$f"
	done
}
bad=0
summary() { # CONFIG SUITE LOGFILE
	# test.sh prints one summary per run; a suite may hold several runs
	local p=0 s=0 f=0 line a b c
	while read -r line; do
		a=${line#*pass: } a=${a%%/*}
		b=${line#*skip: } b=${b%%/*}
		c=${line#*fail: } c=${c%%/*}
		p=$((p + a)) s=$((s + b)) f=$((f + c))
	done < <(grep '^Test suite summary:' "$3")
	if ! grep -q '^Test suite summary:' "$3" || grep -q 'Test harness error' "$3"; then
		echo "${1:-defaults} $2 harness error (see below)"
		grep -B5 'Test harness error' "$3" | tail -8
		bad=1
		return
	fi
	printf '%s %s pass %d skip %d fail %d\n' "${1:-defaults}" "$2" "$p" "$s" "$f"
	if [ "$f" -ne 0 ]; then
		grep -E '^(Test .*(failed|Failed)|.*: Failed assertion|<jemalloc>)' "$3" | head -10
		bad=1
	fi
}
run_suite() { # CONF SUITE TESTS...
	local conf=$1 suite=$2
	shift 2
	MALLOC_CONF=$conf sh test/test.sh "$@" >"$log/run" 2>&1
	summary "$conf" "$suite" "$log/run"
}

# the defaults: jemalloc's own targets, as its developers run them, once:
# no retry (test/unit/hpa_background_thread failed 2 of 1,000 runs patched,
# 0 of 1,000 stock, until a patch (now 0013) bounded an indefinite sleep; see
# rate-hpa-bg.sh and the jemalloc README)
make check >"$log/check" 2>&1
summary "" "check(unit+integration+decay+prof)" "$log/check"
if [ $quick -eq 0 ]; then
	make stress >"$log/stress" 2>&1
	summary "" stress "$log/stress"
fi
for conf in "${VARIANTS[@]}"; do
	if [ $quick -eq 1 ]; then
		# shellcheck disable=SC2046 # a list of names
		run_suite "$conf" unit-subset $(for t in $QUICK_UNIT; do echo "test/unit/$t"; done)
		# shellcheck disable=SC2046
		run_suite "$conf" integration $(list integration)
	else
		# shellcheck disable=SC2046
		run_suite "$conf" unit $(list unit)
		# shellcheck disable=SC2046
		run_suite "$conf" integration $(list integration)
		# shellcheck disable=SC2046
		run_suite "$conf" stress $(list stress)
	fi
done
exit $bad
