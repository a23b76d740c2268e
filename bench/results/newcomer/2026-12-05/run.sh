#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The README's newcomer path, timed: a fresh clone of this repository, the
# two set-up commands (read from README.md, as .ci/run reads the second),
# then "A jemalloc program": the packages build.sh needs, build.sh, and
# redis-server with the patched jemalloc preloaded and the recommended
# MALLOC_CONF, asked for its libpurge counters after some load.  Each
# jemalloc step is checked to be a line of the README, so the two cannot
# drift apart.  Writes times.txt (and the logs) into this folder (OUT=DIR:
# elsewhere).  As root, on Debian 12, with network access to its archive;
# about 5 minutes on the project's 2-vCPU VM.
#
# usage: bench/results/newcomer/2026-12-05/run.sh [REPO]   (default: this one)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here}
repo=$(cd "${1:-$here/../../../..}" && pwd)
work=$(mktemp -d)
mkdir "$work/clone"
trap 'redis-cli -p 6390 shutdown nosave >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
log=$out/times.txt
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); Linux $(uname -r)"
	echo "commit: $(git -C "$repo" rev-parse --short HEAD)"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$log"
step() { # NAME COMMAND: run it in the clone, append its wall time
	local name=$1 t0 t1 rc=0
	shift
	t0=$(date +%s.%N)
	(cd "$work/clone" && eval "$*") >"$out/$name.log" 2>&1 || rc=$?
	t1=$(date +%s.%N)
	printf '%-14s %6.1f s  exit %d  + %s\n' "$name" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$rc" "$*" >>"$log"
	[ "$rc" -eq 0 ] || { echo "run.sh: $name failed (exit $rc): $out/$name.log" >&2; exit 1; }
}
readme_line() { # a line the README has, word for word
	grep -qF -- "$1" "$repo/README.md" || { echo "run.sh: README.md has no line: $1" >&2; exit 1; }
}
block() { # the first line of the README's block after the heading matching $1
	awk -v h="$1" '$0 ~ h {f = 1} f && /^```sh/ {getline; print; exit}' "$repo/README.md"
}

step clone "git clone -q '$repo' ."
step main-job "$(block '^\*\*Main job')"
step tests "$(block '^\*\*Tests')"
deps='apt-get update && apt-get install -y gcc make patch autoconf bzip2 meson ninja-build'
readme_line "$deps"
step je-deps "$deps"
readme_line 'integrations/jemalloc/build.sh     #'
step je-build integrations/jemalloc/build.sh
readme_line 'apt-get install -y redis-server'
step redis-apt 'apt-get install -y redis-server'
conf='MALLOC_CONF=dirty_decay_ms:1000,background_thread:true redis-server --port 6390'
readme_line "$conf --save '' &"
lib=$work/clone/integrations-build/jemalloc/lib/libjemalloc.so.2
(cd "$work/clone" && LD_PRELOAD=$lib MALLOC_CONF=dirty_decay_ms:1000,background_thread:true \
	exec redis-server --port 6390 --save '') >"$out/redis-server.log" 2>&1 &
server=$!
for _ in $(seq 50); do redis-cli -p 6390 ping >/dev/null 2>&1 && break; sleep 0.1; done
step redis-load "redis-benchmark -p 6390 -q -n 100000 -t set,get -d 4096 -r 100000 | tr '\r' '\n' | tail -n 3 && redis-cli -p 6390 flushall"
sleep 2 # the background thread's decay (dirty_decay_ms:1000)
readme_line "redis-cli -p 6390 memory malloc-stats | grep -A7 '^libpurge:'"
redis-cli -p 6390 memory malloc-stats | grep -A7 '^libpurge:' >"$out/redis-libpurge.txt"
redis-cli -p 6390 info memory | grep -E '^(mem_allocator|used_memory_rss_human):' >>"$out/redis-libpurge.txt"
redis-cli -p 6390 shutdown nosave >/dev/null 2>&1 || true
rc=0
wait "$server" || rc=$?
echo "redis-server exit status after shutdown: $rc" >>"$log"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$log"
cat "$log" "$out/redis-libpurge.txt"
