# shellcheck shell=sh disable=SC2034 # sets variables for the scripts that source it
# SPDX-License-Identifier: MIT
#
# cpython-lib.sh: the one CPython runner of the integrations, CPython's own
# regression tests under a preloaded allocator (jemalloc/tests/
# test-cpython.sh, mimalloc/cpython.sh).  Sourced, POSIX sh.  What it sets
# starts with cpython_.

# cpython_find: $cpython_py, a python3 with CPython's test package ($PYTHON
# first); without one, a SKIP line and exit 77.
cpython_find() {
	cpython_py=
	for cpython_p in ${PYTHON:-} /usr/bin/python3 python3; do
		if "$cpython_p" -c 'import test.support, test.test_threading' >/dev/null 2>&1; then
			cpython_py=$cpython_p
			return 0
		fi
	done
	echo "SKIP: no python3 with CPython's test package (Debian: apt-get install python3 libpython3.11-testsuite; or set PYTHON)"
	exit 77
}

# cpython_run OUT NAME LIMIT_S VAR=VALUE... -- REGRTEST_ARGS...: regrtest
# ($cpython_py -m test REGRTEST_ARGS) with VAR=VALUE... in its environment
# (LD_PRELOAD among them).  Its status in $cpython_rc, its output in
# OUT/NAME.log and every test case with its outcome in OUT/NAME.res (sorted,
# a skip's reason left out).  timeout(1) runs it in a process group of its
# own and kills it after LIMIT_S seconds (regrtest's own --timeout dumps the
# stacks of a hung test first); what is left of the group afterwards (a hung
# child) is killed.
cpython_run() {
	cpython_out=$1 cpython_name=$2 cpython_limit=$3
	shift 3
	# "VAR=VALUE... -- ARGS..." becomes "VAR=VALUE... PYTHON -m test ARGS..."
	cpython_n=$#
	while [ "$cpython_n" -gt 0 ]; do
		cpython_a=$1
		shift
		if [ "$cpython_a" = -- ]; then
			set -- "$@" "$cpython_py" -m test
		else
			set -- "$@" "$cpython_a"
		fi
		cpython_n=$((cpython_n - 1))
	done
	timeout -s KILL "$cpython_limit" env "$@" >"$cpython_out/$cpython_name.log" 2>&1 &
	cpython_pid=$!
	wait "$cpython_pid"
	cpython_rc=$?
	kill -KILL -- -"$cpython_pid" 2>/dev/null || true
	sed -n 's/^\(test[a-zA-Z0-9_]*\) (\([^)]*\)) \.\.\. \(.*\)$/\2.\1 \3/p' \
		"$cpython_out/$cpython_name.log" | sed 's/ skipped .*/ skipped/' |
		sort >"$cpython_out/$cpython_name.res"
}
