#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# calloc-py.sh ROUNDS LIB...: calloc-py.py under each LIB preloaded, with
# MALLOC_CONF=$CONF (default dirty_decay_ms:1000,background_thread:true), purge calls
# counted by strace -f -c (madvise, process_madvise); appends to
# calloc-py.txt here.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
rounds=$1
conf=${CONF:-dirty_decay_ms:1000,background_thread:true}
shift
# the interpreter itself, not a wrapper (a pyenv shim is a bash script
# whose processes would be traced and counted too)
py=${PY:-$(python3 -c 'import sys; print(sys.executable)')}
out=$here/calloc-py.txt
{
	echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC'); nproc $(nproc); uname -r $(uname -r); load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "python: $py"
	echo "command: CONF=$conf bench/results/jemalloc/2026-12-05/calloc-py.sh $rounds $*"
} >>"$out"
for lib in "$@"; do
	t0=$(date +%s.%N)
	res=$(LD_PRELOAD=$lib MALLOC_CONF=$conf \
		strace -f -c -e trace=madvise,process_madvise "$py" "$here/calloc-py.py" "$rounds" 2>&1)
	t1=$(date +%s.%N)
	m=$(echo "$res" | awk '$NF == "madvise" { print $4 }')
	p=$(echo "$res" | awk '$NF == "process_madvise" { print $4 }')
	z=$(echo "$res" | awk '$1 == "nonzero" { print $2 }')
	printf '%s madvise=%s process_madvise=%s nonzero=%s wall_s=%.1f\n' "$lib" "${m:-0}" "${p:-0}" "$z" \
		"$(echo "$t1 - $t0" | bc)" | tee -a "$out"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out"
