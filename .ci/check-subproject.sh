#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# libpurge as a meson subproject, set up the way docs/building.md's "Meson
# subproject" item says.  Builds the parent project in .ci/consumers/meson
# (a copy, with this checkout linked in as subprojects/libpurge and
# .ci/consumer.c as its program) and checks:
#  - building.md's shell block, run as written in the parent, puts the
#    libpurge.wrap this tree ships into subprojects/, and then building.md's
#    purge_dep = dependency('purge') (the parent's lookup=provide line,
#    checked to be building.md's words) resolves to libpurge's override;
#  - without the wrap that line fails with "Dependency purge not found",
#    as building.md says, and building.md's fallback: 'libpurge' line works;
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

# building.md's "Meson subproject" item: its shell block ("sh"), or the
# dependency() lines of its code spans ("deps"; a span may wrap lines).
readme_item() {
	python3 -c 'import re, sys
parts = open(sys.argv[1]).read().split("- **Meson subproject.**", 1)
item = parts[1].split("\n- **", 1)[0] if len(parts) > 1 else ""
if sys.argv[2] == "sh":
    m = re.search(r"```sh\n(.*?)\n *```", item, re.S)
    print("\n".join(l.strip() for l in m.group(1).splitlines()) if m else "")
else:
    spans = re.findall(r"`(purge_dep = dependency\([^`]*\))`", re.sub(r"\s+", " ", item))
    print("\n".join(spans))' "$root/docs/building.md" "$1"
}
recipe=$(readme_item sh)
[ -n "$recipe" ] || die "no shell block in building.md's \"Meson subproject\" item"
deps=$(readme_item deps)
[ "$(grep -c . <<<"$deps")" = 2 ] ||
	die "building.md's \"Meson subproject\" item should give two dependency() lines," \
		"plain and with fallback; found:"$'\n'"$deps"
while read -r line; do
	grep -qF "$line" "$root/.ci/consumers/meson/meson.build" ||
		die "building.md's '$line' is not in .ci/consumers/meson/meson.build"
done <<<"$deps"

# A parent: libpurge's tree in subprojects/libpurge (a symlink, which the
# page allows), then, for "wrap", building.md's shell block as written.
make_parent() { # DIR wrap|nowrap
	cp -r "$root/.ci/consumers/meson" "$1"
	cp "$root/.ci/consumer.c" "$1/consumer.c"
	mkdir -p "$1/subprojects"
	ln -s "$root" "$1/subprojects/libpurge"
	[ "$2" = wrap ] || return 0
	echo "check-subproject: building.md's recipe: $recipe"
	(cd "$1" && sh -eu -c "$recipe") || die "building.md's recipe failed"
}
parent="$work/parent"
make_parent "$parent" wrap
bare="$work/parent-nowrap"
make_parent "$bare" nowrap

# Files a staged install holds, relative to its root, sorted.
staged() { (cd "$1" && find . ! -type d | sed 's|^\./||' | sort); }

check() { # NAME DEFAULT_LIBRARY LOOKUP PARENT
	local name=$1 kind=$2 lookup=$3 src=$4 b="$work/build-$1" out
	echo "check-subproject: $name (default_library=$kind, lookup=$lookup)"
	# --force-fallback-for: a libpurge installed on the machine must not win.
	meson setup "$b" "$src" --prefix=/usr --force-fallback-for=purge \
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

# Without the wrap a plain dependency('purge') finds nothing, as building.md
# says: the wrap is what its recipe adds.
if meson setup "$work/build-nowrap" "$bare" --force-fallback-for=purge \
	>"$work/nowrap.log" 2>&1; then
	die "without the wrap dependency('purge') resolved: building.md says it fails"
fi
grep -q 'Dependency "purge" not found' "$work/nowrap.log" ||
	{ cat "$work/nowrap.log" >&2; die "without the wrap: not the error building.md quotes"; }
echo "check-subproject: without the wrap, dependency('purge') fails as building.md says"

check static static provide "$parent"
check shared shared provide "$parent"
check fallback static fallback "$bare"

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
