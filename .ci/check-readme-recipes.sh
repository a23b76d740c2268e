#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's "Which way in" recipes, run as written: each shell block
# under "### A jemalloc program", "### A mimalloc program" and "### Your
# own allocator", read from README.md (so the two cannot drift apart), from
# the repository root, and each must show a nonzero purge count:
#  - jemalloc: the queues' "bytes purged" and "process_madvise calls" or
#    "madvise calls" (the loop, where the kernel refuses the call) above 0;
#  - mimalloc: "-batched" ranges and "-calls" above 0;
#  - the four calls: pagerun's last line counts some calls, and under
#    PURGE_MODE=loop only madvise() calls.
# The apt-get lines are left out (CI installs its packages itself); a
# recipe whose source tarball is not in ../shared/sources is skipped.
# usage: .ci/check-readme-recipes.sh [jemalloc|mimalloc|pagerun...]
#   default: all three; pagerun needs build/ (the README's test command)
# Exit status: 0 when every recipe run shows purges, 77 when all were
# skipped, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
sources=$(cd .. && pwd)/shared/sources
die() { echo "check-readme-recipes: $*" >&2; exit 1; }

# The shell block that follows README.md's line starting with $1.
recipe() {
	awk -v h="$1" 'index($0, h) == 1 { f = 1; next }
		f && /^```sh$/ { b = 1; next }
		b && /^```$/ { exit }
		b && !/^apt-get / { print }' README.md
}

# The number (with mimalloc's K or M) after the regex $1 on the first line
# of $2 that has one there; empty when none does.
count() {
	grep -a -m1 -E -e "$1[ :]+[0-9]" <<<"$2" | sed -E -e "s/^.*$1[ :]+([0-9.]+( [KMG]\\b)?).*/\\1/" || true
}
positive() { [[ ${1:-0} =~ [1-9] ]]; }

run_recipe() { # heading
	local r
	r=$(recipe "$1")
	[ -n "$r" ] || die "no shell block under README.md's \"$1\""
	echo "check-readme-recipes: $1:" >&2
	sed 's/^/  + /' <<<"$r" >&2
	bash -eo pipefail -c "$r" 2>&1
}

ran=0
check_jemalloc() {
	[ -f "$sources/jemalloc-5.3.1.tar.xz" ] || { echo "check-readme-recipes: jemalloc: skipped, no $sources/jemalloc-5.3.1.tar.xz"; return; }
	command -v redis-server >/dev/null || { echo "check-readme-recipes: jemalloc: skipped, no redis-server"; return; }
	trap 'redis-cli -p 6390 shutdown nosave >/dev/null 2>&1 || true' EXIT
	local out purged calls
	out=$(run_recipe "### A jemalloc program") || { echo "$out"; die "jemalloc: the recipe failed"; }
	echo "$out" | tail -n 12
	purged=$(count "bytes purged" "$out") calls=$(count "process_madvise calls" "$out")
	positive "$calls" || calls=$(count "(^| )madvise calls" "$out")
	positive "$purged" && positive "$calls" ||
		die "jemalloc: no purge shown (bytes purged '${purged:-}', calls '${calls:-}')"
	echo "check-readme-recipes: jemalloc: $purged bytes purged in $calls calls"
	ran=$((ran + 1))
}

check_mimalloc() {
	[ -f "$sources/mimalloc-3.4.3.tar.xz" ] || { echo "check-readme-recipes: mimalloc: skipped, no $sources/mimalloc-3.4.3.tar.xz"; return; }
	local out batched calls
	out=$(run_recipe "### A mimalloc program") || { echo "$out"; die "mimalloc: the recipe failed"; }
	echo "$out" | tail -n 3
	batched=$(count "-batched" "$out") calls=$(count "-calls" "$out")
	positive "$batched" && positive "$calls" ||
		die "mimalloc: no purge shown (-batched '${batched:-}', -calls '${calls:-}')"
	echo "check-readme-recipes: mimalloc: $batched ranges purged in batches, $calls calls"
	ran=$((ran + 1))
}

check_pagerun() {
	[ -x build/examples/pagerun ] || die "pagerun: no build/examples/pagerun (run the README's test command first)"
	local out vec loop
	out=$(run_recipe "### Your own allocator") || { echo "$out"; die "pagerun: the recipe failed"; }
	echo "$out"
	vec=$(sed -n 1p <<<"$out") loop=$(sed -n 2p <<<"$out")
	grep -qE '; [0-9]+ process_madvise \+ [0-9]+ madvise calls$' <<<"$vec" &&
		! grep -qE '; 0 process_madvise \+ 0 madvise' <<<"$vec" ||
		die "pagerun: no calls counted: $vec"
	grep -qE '^pagerun: ok: loop;.*; 0 process_madvise \+ [1-9][0-9]* madvise calls$' <<<"$loop" ||
		die "pagerun: PURGE_MODE=loop is not the madvise loop: $loop"
	ran=$((ran + 1))
}

want=("$@")
[ ${#want[@]} -gt 0 ] || want=(pagerun mimalloc jemalloc)
for w in "${want[@]}"; do
	case $w in
	jemalloc | mimalloc | pagerun) "check_$w" ;;
	*) die "usage: .ci/check-readme-recipes.sh [jemalloc|mimalloc|pagerun...]" ;;
	esac
done
[ "$ran" -gt 0 ] || exit 77
echo "check-readme-recipes: $ran of ${#want[@]} recipes ran and showed purges"
