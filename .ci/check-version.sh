#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One version everywhere.  These must all say the same MAJOR.MINOR.PATCH:
#  - meson's project version (meson.build);
#  - PURGE_VERSION_MAJOR/MINOR/PATCH in include/purge.h, and PURGE_VERSION;
#  - Version: in the generated purge.pc;
#  - PACKAGE_VERSION in the generated purgeConfigVersion.cmake;
#  - purge_version() of the built library (a tiny program asks it);
#  - purge_version(3)'s synopsis and every man page's .TH "libpurge MAJOR.MINOR";
# and the ABI names must carry the same major: the soname
# (libpurge.so.MAJOR), the library file (libpurge.so.MAJOR.MINOR.PATCH) and
# the version nodes of src/purge.map (PURGE_MAJOR.N).
# Usage: .ci/check-version.sh BUILDDIR    (a top-level build, already built)
set -euo pipefail

build=${1:?usage: $0 BUILDDIR}
root=$(cd "$(dirname "$0")/.." && pwd)
cc=${CC:-cc}
fail=0
err() { echo "check-version: $*" >&2; fail=1; }
die() { echo "check-version: $*" >&2; exit 1; }
[ -f "$build/meson-info/meson-info.json" ] || die "$build is not a meson build directory"
build=$(cd "$build" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/purge-version.XXXXXX")
trap 'rm -rf "$work"' EXIT

meson_v=$(meson introspect "$build" --projectinfo |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')
[[ $meson_v =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] || die "meson version '$meson_v' is not MAJOR.MINOR.PATCH"
major=${BASH_REMATCH[1]}
echo "check-version: meson.build: $meson_v"

hdr() { sed -n "s/^#define PURGE_VERSION_$1 \([0-9]*\)\$/\1/p" "$root/include/purge.h"; }
header_v="$(hdr MAJOR).$(hdr MINOR).$(hdr PATCH)"
[ "$header_v" = "$meson_v" ] || err "include/purge.h says $header_v, meson.build $meson_v"

# purge_version(3)'s synopsis, and the MAJOR.MINOR in every page's .TH line
mp="$root/man/purge_version.3"
man_v="$(sed -n 's/^\.B #define PURGE_VERSION_MAJOR \([0-9]*\)$/\1/p' "$mp").$(sed -n \
	's/^\.B #define PURGE_VERSION_MINOR \([0-9]*\)$/\1/p' "$mp").$(sed -n \
	's/^\.B #define PURGE_VERSION_PATCH \([0-9]*\)$/\1/p' "$mp")"
[ "$man_v" = "$meson_v" ] || err "purge_version(3)'s synopsis says $man_v, meson.build $meson_v"
for page in "$root"/man/*.[0-9]; do
	th=$(sed -n '/^\.TH /{s/.*"libpurge \([0-9.]*\)".*/\1/p;q}' "$page")
	[ "$th" = "${meson_v%.*}" ] || err "$(basename "$page"): .TH says libpurge '$th', want ${meson_v%.*}"
done

pc="$build/meson-private/purge.pc"
if [ -f "$pc" ]; then
	pc_v=$(sed -n 's/^Version: *//p' "$pc")
	[ "$pc_v" = "$meson_v" ] || err "purge.pc says '$pc_v', meson.build $meson_v"
else
	err "no $pc (configured with install=false?)"
fi

cm="$build/purgeConfigVersion.cmake"
if [ -f "$cm" ]; then
	cm_v=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$cm")
	[ "$cm_v" = "$meson_v" ] || err "purgeConfigVersion.cmake says '$cm_v', meson.build $meson_v"
else
	err "no $cm (configured with install=false?)"
fi

# What the built library answers, and what the header makes of it.
cat >"$work/v.c" <<'EOF'
#include <stdio.h>

#include "purge.h"

int main(void)
{
	printf("%d %d\n", purge_version(), PURGE_VERSION);
	return 0;
}
EOF
if [ -f "$build/libpurge.so" ]; then
	lib=(-L"$build" -lpurge "-Wl,-rpath,$build")
else
	lib=("$build/libpurge.a" -pthread)
fi
"$cc" -std=c11 -I"$root/include" "$work/v.c" -o "$work/v" "${lib[@]}" || die "cannot build the version program"
read -r runs compiled < <(env -u LD_LIBRARY_PATH "$work/v")
IFS=. read -r ma mi pa <<<"$meson_v"
want=$((ma * 10000 + mi * 100 + pa))
[ "$runs" = "$want" ] || err "purge_version() answers $runs, want $want ($meson_v)"
[ "$compiled" = "$want" ] || err "PURGE_VERSION is $compiled, want $want ($meson_v)"

# ABI names.
if [ -f "$build/libpurge.so" ]; then
	soname=$(readelf -d "$build/libpurge.so" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
	[ "$soname" = "libpurge.so.$(hdr MAJOR)" ] ||
		err "soname '$soname' does not carry PURGE_VERSION_MAJOR $(hdr MAJOR)"
	real=$(basename "$(readlink -f "$build/libpurge.so")")
	[ "$real" = "libpurge.so.$meson_v" ] || err "the library file is $real, want libpurge.so.$meson_v"
else
	soname="(static build)"
fi
nodes=$(grep -oE '^PURGE_[0-9]+\.[0-9]+' "$root/src/purge.map" | sort -u)
[ -n "$nodes" ] || err "no PURGE_MAJOR.N version node in src/purge.map"
for n in $nodes; do
	[[ $n == PURGE_$major.* ]] || err "src/purge.map node $n is not of major $major"
done

[ $fail -eq 0 ] || die "FAILED"
echo "check-version: ok: $meson_v in meson.build, purge.h, purge.pc, purgeConfigVersion.cmake," \
	"purge_version() ($runs); soname $soname; map nodes ${nodes//$'\n'/ }"
