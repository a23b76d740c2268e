#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The USDT probes of docs/tracing.md are in the built library, and the first
# two bpftrace one-liners of that file work against examples/pagerun where
# bpftrace can attach (root, uprobes); elsewhere they are skipped, saying so.
#   usage: .ci/check-probes.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
lib=$(readlink -f "$build/libpurge.so")

want="cancel demote fail flush_done flush_start madv pmadv"
have=$(readelf -n "$lib" | awk '/Provider: libpurge/ {getline; print $2}' | sort -u | xargs)
if [ "$have" != "$want" ]; then
	echo "check-probes: $lib has probes '$have', docs/tracing.md lists '$want'" >&2
	exit 1
fi
echo "check-probes: $lib carries the 7 probes: $have"

if ! command -v bpftrace >/dev/null || [ "$(id -u)" != 0 ]; then
	echo "check-probes: bpftrace one-liners skipped (needs bpftrace and root)"
	exit 0
fi
# The one-liners as the document prints them: its first two bpftrace blocks.
mapfile -t progs < <(python3 - docs/tracing.md <<'EOF'
import re, sys
text = open(sys.argv[1]).read().split("## One-liners", 1)[1]
blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
for b in [b for b in blocks if b.startswith("bpftrace -e")][:2]:
    m = re.match(r'bpftrace -e "(.*)"\s*$', b.strip(), re.S)
    print(m.group(1).replace("\n", " "))
EOF
)
[ "${#progs[@]}" = 2 ] || { echo "check-probes: one-liners not found in docs/tracing.md" >&2; exit 1; }
for i in 0 1; do
	prog=${progs[$i]//\$LIB/$lib}
	out=$(mktemp)
	timeout -s INT 20 bpftrace -e "$prog" >"$out" 2>&1 &
	tracer=$!
	sleep 5 # attaching takes a moment
	"$build/examples/pagerun" >/dev/null
	sleep 1
	kill -INT "$tracer" 2>/dev/null || true
	wait "$tracer" || true
	if grep -q "Attaching" "$out" && grep -qE '^\[[0-9]+, [0-9]+\)' "$out"; then
		echo "check-probes: one-liner $((i + 1)) gave a histogram:"
		grep -E '^@|^\[' "$out" | head -8
	elif grep -qiE "permission|not supported|failed to attach|uprobe" "$out"; then
		echo "check-probes: one-liner $((i + 1)) could not attach here, skipped:"
		head -3 "$out"
	else
		echo "check-probes: one-liner $((i + 1)) gave no histogram:" >&2
		cat "$out" >&2
		exit 1
	fi
	rm -f "$out"
done
