#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# libpurge as a meson subproject.  Builds the parent project in
# .ci/consumers/meson (a copy, with this checkout linked in as
# subprojects/libpurge and .ci/consumer.c as its program) and checks:
#  - dependency('purge') resolves to libpurge's override, through the wrap's
#    [provide] and through fallback: 'libpurge';
#  - the parent's default_library decides: =static links libpurge.a into
#    the program (no libpurge.so needed), =shared links libpurge.so.2;
#  - the subproject builds the library alone (no tests, tools, examples),
#    never looks for Criterion, and builds under the parent's -Dwerror=true;
#  - the program runs;
#  - meson install of the parent installs the parent's program and nothing
#    of libpurge's, unless the parent asks with -Dlibpurge:install=true.
# Usage: .ci/check-subproject.sh      (CC overrides the compiler)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "check-subproject: $*" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/purge-subproject.XXXXXX")
trap 'rm -rf "$work"' EXIT

parent="$work/parent"
cp -r "$root/.ci/consumers/meson" "$parent"
cp "$root/.ci/consumer.c" "$parent/consumer.c"
ln -s "$root" "$parent/subprojects/libpurge"

# Files a staged install holds, relative to its root, sorted.
staged() { (cd "$1" && find . ! -type d | sed 's|^\./||' | sort); }

check() { # NAME DEFAULT_LIBRARY LOOKUP
	local name=$1 kind=$2 lookup=$3 b="$work/build-$1" out
	echo "check-subproject: $name (default_library=$kind, lookup=$lookup)"
	# --force-fallback-for: a libpurge installed on the machine must not win.
	meson setup "$b" "$parent" --prefix=/usr --force-fallback-for=purge \
		-Ddefault_library="$kind" -Dlookup="$lookup" -Dwerror=true >"$work/$name.log" 2>&1 ||
		{ cat "$work/$name.log" >&2; die "$name: meson setup failed"; }
	grep -q 'Dependency purge found: YES .*(overridden)' "$work/$name.log" ||
		{ cat "$work/$name.log" >&2; die "$name: 'purge' was not libpurge's override"; }
	if grep -qiE 'dependency criterion|Criterion links' "$b/meson-logs/meson-log.txt"; then
		die "$name: the subproject looked for Criterion"
	fi

	# The subproject's targets: the library, nothing else.
	out=$(meson introspect "$b" --targets | python3 -c 'import json, sys
for t in json.load(sys.stdin):
    if t["subproject"] == "libpurge":
        print(t["name"], t["type"].replace(" ", "-"))' | sort)
	case $kind in
	static) want="purge static-library" ;;
	shared) want="purge shared-library" ;;
	esac
	[ "$out" = "$want" ] || die "$name: subproject targets are [$out], want [$want]"

	ninja -C "$b" >"$work/$name.ninja.log" 2>&1 ||
		{ cat "$work/$name.ninja.log" >&2; die "$name: build failed"; }
	needed=$(readelf -d "$b/consumer" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
	case $kind in
	static) grep -q libpurge <<<"$needed" && die "$name: the program needs $needed" ;;
	shared) grep -q 'libpurge\.so\.2' <<<"$needed" ||
		die "$name: the program does not need libpurge.so.2 ($needed)" ;;
	esac
	"$b/consumer" || die "$name: the program failed"

	# Installs the parent's program only.
	rm -rf "$work/dest"
	meson install -C "$b" --destdir "$work/dest" --quiet >/dev/null ||
		die "$name: meson install failed"
	out=$(staged "$work/dest")
	[ "$out" = "usr/bin/consumer" ] ||
		die "$name: the parent's install holds more than its program:"$'\n'"$out"
	echo "check-subproject: $name: ok (needs: ${needed:-nothing})"
}

check static static provide
check shared shared provide
check fallback static fallback

# Asked for: the library, header, purge.pc and CMake files, still no tests,
# tools or man pages.
b="$work/build-shared"
meson configure "$b" -Dlibpurge:install=true >/dev/null
rm -rf "$work/dest"
meson install -C "$b" --destdir "$work/dest" --quiet >/dev/null || die "install=true: meson install failed"
out=$(staged "$work/dest")
for f in usr/bin/consumer usr/include/purge.h 'usr/lib/.*libpurge\.so\.2' \
	'usr/lib/.*pkgconfig/purge\.pc' 'usr/lib/.*cmake/purge/purgeConfig\.cmake'; do
	grep -qx "$f" <<<"$out" || die "install=true: $f not installed:"$'\n'"$out"
done
if grep -qE 'share/man|purge-bench|plot\.gp' <<<"$out"; then
	die "install=true installed tools or man pages:"$'\n'"$out"
fi
echo "check-subproject: -Dlibpurge:install=true: ok ($(wc -l <<<"$out") files)"
echo "check-subproject: ok"
