#!/bin/sh
# SPDX-License-Identifier: MIT
#
# redis-flushall.sh [-L LIB] [-a] [-k KEYS] [-v BYTES] [-t SECONDS]: how fast a
# quiet redis-server gives memory back after FLUSHALL.  Starts
# redis-server (the system's, linked to libjemalloc.so.2) on a free port,
# fills it with DEBUG POPULATE, then FLUSHALL and prints RSS every second
# for SECONDS.  With -L, LIB is preloaded (the patched jemalloc, say; its
# MALLOC_CONF from the environment); without, the system's jemalloc runs
# with redis' defaults (background thread, 10 s decay).
# A synchronous FLUSHALL ends with redis' own jemalloc_purge() (src/db.c:
# arena.<all>.purge); -a sends FLUSHALL ASYNC, which does not.
# Prints the machine, kernel and every parameter first.
set -eu

lib=
keys=500000
vbytes=300
secs=15
async=
while getopts L:ak:v:t: o; do
	case $o in
	a) async=async ;;
	L) lib=$(cd "$(dirname "$OPTARG")" && pwd)/$(basename "$OPTARG") ;;
	k) keys=$OPTARG ;;
	v) vbytes=$OPTARG ;;
	t) secs=$OPTARG ;;
	*) exit 2 ;;
	esac
done
command -v redis-server >/dev/null || { echo "no redis-server (apt-get install redis-server)"; exit 77; }
port=$((20000 + $$ % 20000))
dir=$(mktemp -d)
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT

echo "machine: $(nproc) CPUs, $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "redis: $(redis-server --version | cut -d' ' -f3,5,6) keys=$keys value_bytes=$vbytes" \
	"seconds=$secs flushall=${async:-sync} preload=${lib:-none}" \
	"$(env | grep '^PURGE_\|^MALLOC_CONF=' | tr '\n' ' ')"
env ${lib:+LD_PRELOAD="$lib"} redis-server --port "$port" --save "" --appendonly no \
	--dir "$dir" --enable-debug-command yes >"$dir/log" 2>&1 &
pid=$!
for _ in $(seq 50); do
	redis-cli -p "$port" ping >/dev/null 2>&1 && break
	sleep 0.1
done
rss() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status"; }
redis-cli -p "$port" debug populate "$keys" key "$vbytes" >/dev/null
echo "filled: rss_mib=$(rss)"
# shellcheck disable=SC2086 # empty or one word
redis-cli -p "$port" flushall $async >/dev/null
t=0
line="after FLUSHALL, rss_mib by second:"
while [ "$t" -le "$secs" ]; do
	line="$line $t:$(rss)"
	sleep 1
	t=$((t + 1))
done
echo "$line"
