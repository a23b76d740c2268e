#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test-fds.sh: issue 35's reproducer, run many times.  je-fds (built from
# je-fds.c next to this script when no binary is given) starts with a
# jemalloc preloaded and MALLOC_CONF=background_thread:true, closes every
# descriptor from 3 up (or puts its own file over them, or does so in a fork
# child), opens 10 files of its own and writes 16 bytes to each, wakes the
# background thread, and turns it off under a 20 s alarm.  A run passes when
# every file keeps its 16 bytes and stays open and background_thread:false
# returns within 1 s.
#
# usage: test-fds.sh [-n RUNS] [-m "MODES"] [-b JE_FDS] NAME=LIB...
#   -n   runs of each mode and library (default 100), interleaved: run i of
#        every library, then run i+1
#   -m   je-fds modes (default "closefrom"; also closeloop, dup2, fork)
#   -b   a built je-fds (default: cc je-fds.c into a temporary directory)
#   NAME=LIB  a libjemalloc.so.2 to preload (default: patched=build.sh's
#        output, or $JEMALLOC_PATCHED)
# Prints `uptime` before and after, each failed run's line, and one summary
# line per mode and library:
#   MODE NAME runs R pass P fail F (bytes B, slow S, hung H, other O)
# Exit 0 when every run of every library whose NAME starts with "patched"
# passed, 77 when no library or compiler is there, 1 otherwise.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
n=100 modes=closefrom bin=""
while getopts n:m:b: o; do
	case $o in
	n) n=$OPTARG ;;
	m) modes=$OPTARG ;;
	b) bin=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -eq 0 ]; then
	lib=${JEMALLOC_PATCHED:-$repo/integrations-build/jemalloc/lib/libjemalloc.so.2}
	if [ ! -f "$lib" ]; then
		echo "SKIP: no patched jemalloc at $lib: run integrations/jemalloc/build.sh, or set JEMALLOC_PATCHED"
		exit 77
	fi
	set -- "patched=$lib"
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-fds.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ -z "$bin" ]; then
	cc=${CC:-cc}
	if ! command -v "$cc" >/dev/null; then
		echo "SKIP: no C compiler ($cc) to build je-fds"
		exit 77
	fi
	bin=$tmp/je-fds
	"$cc" -O2 -o "$bin" "$here/je-fds.c" -ldl || exit 1
fi
# the runs cd into $tmp: a relative path must not change meaning there
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
[ -x "$bin" ] || { echo "test-fds: no je-fds at $bin"; exit 1; }
declare -A pass bytes slow hung other
names=() libs=()
for a in "$@"; do
	l=${a#*=}
	[ -f "$l" ] || { echo "SKIP: no library $l"; exit 77; }
	names+=("${a%%=*}")
	libs+=("$(cd "$(dirname "$l")" && pwd)/$(basename "$l")")
done
echo "test-fds: $n runs of each of: $modes; $(uptime)"
for m in $modes; do
	for k in "${names[@]}"; do
		pass[$m.$k]=0 bytes[$m.$k]=0 slow[$m.$k]=0 hung[$m.$k]=0 other[$m.$k]=0
	done
	for ((i = 1; i <= n; i++)); do
		for j in "${!names[@]}"; do
			k=${names[$j]}
			rc=0
			out=$(cd "$tmp" && timeout -k 5 60 env LD_PRELOAD="${libs[$j]}" \
				MALLOC_CONF=background_thread:true "$bin" "$m" "$tmp" 2>&1) || rc=$?
			case $rc in
			0) pass[$m.$k]=$((pass[$m.$k] + 1)) ;;
			1) bytes[$m.$k]=$((bytes[$m.$k] + 1)) ;;
			2) slow[$m.$k]=$((slow[$m.$k] + 1)) ;;
			3 | 124 | 137) hung[$m.$k]=$((hung[$m.$k] + 1)) ;;
			77) echo "SKIP: $k: $out"; exit 77 ;;
			*) other[$m.$k]=$((other[$m.$k] + 1)) ;;
			esac
			[ $rc -eq 0 ] || echo "$m $k run $i (exit $rc): $(echo "$out" | tr '\n' ' ')"
		done
	done
done
echo "test-fds: done; $(uptime)"
bad=0
for m in $modes; do
	for k in "${names[@]}"; do
		f=$((n - pass[$m.$k]))
		printf '%s %s runs %d pass %d fail %d (bytes %d, slow %d, hung %d, other %d)\n' \
			"$m" "$k" "$n" "${pass[$m.$k]}" "$f" "${bytes[$m.$k]}" "${slow[$m.$k]}" \
			"${hung[$m.$k]}" "${other[$m.$k]}"
		case $k in patched*) [ $f -eq 0 ] || bad=1 ;; esac
	done
done
exit $bad
