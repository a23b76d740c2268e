#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-v3.sh [-w WORKDIR] [-s SOURCE] [-j JOBS]: mimalloc 3.4.3 with the
# batched purge series (../patches/3.4.3) against the same source unpatched.
# Builds both with ../build.sh --v3 [--stock] into WORKDIR (default
# integrations-build/mimalloc-v3-check; a build is kept while build.sh,
# the patches and the source are unchanged), then runs mimalloc's own
# CTest suite in each: stock has 4 tests (api, api-fill, stress,
# stress-dynamic), the patched build one more (purge-batch, the series'
# own).  Every test must pass in both, and the patched build must have
# stock's tests and its own.
# SOURCE: a mimalloc 3.4.3 tree or tarball (default: build.sh's,
# ../shared/sources/mimalloc-3.4.3.tar.xz).
# Exit status: 0 all passed; 1 a build or a test failed; 2 bad usage;
# 77 no source or no cmake (skipped).
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
build_sh=$here/../build.sh
work=$repo/integrations-build/mimalloc-v3-check source="" jobs=${JOBS:-2}
while getopts w:s:j:h opt; do
	case $opt in
	w) work=$OPTARG ;;
	s) source=$OPTARG ;;
	j) jobs=$OPTARG ;;
	h) sed -n '3,18p' "$0"; exit 0 ;;
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
build v3-patched
ctest_in v3-stock
stock_names=$names stock_total=$total
ctest_in v3-patched
for n in $stock_names; do
	case " $names " in *" $n "*) ;; *) echo "FAIL: the patched build lacks stock's test $n"; fail=1 ;; esac
done
case " $names " in *" test-purge-batch "*) ;; *) echo "FAIL: the patched build has no test-purge-batch"; fail=1 ;; esac
[ "$total" -gt "$stock_total" ] || { echo "FAIL: patched runs $total tests, stock $stock_total"; fail=1; }
[ $fail = 0 ] && echo "check-v3: OK" || echo "check-v3: FAILED"
exit $fail
