#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The CMake package files.  Installs libpurge into scratch prefixes with
# meson (default_library=both, shared, static), then configures, builds and
# runs the CMake project in .ci/consumers/cmake, which does
# find_package(purge CONFIG REQUIRED) against that prefix:
#  - purge::purge links libpurge.so.2 from the prefix, purge::purge_static
#    links libpurge.a (no libpurge.so needed), and the program runs;
#  - SameMajorVersion: 2, 2.0 and this minor are found, 1, 3 and the next
#    minor (a newer 2.x than what is installed) are not, nor is a
#    32-bit install by a 64-bit project (the pointer-size check);
#  - components: static/shared only where that kind was installed, and a
#    static-only install makes purge::purge the archive;
#  - a moved prefix still works (paths relative to the installed file).
# Usage: .ci/check-cmake.sh      (CC overrides the compiler)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "check-cmake: $*" >&2; exit 1; }
command -v cmake >/dev/null || die "cmake not found (apt-get install cmake)"
work=$(mktemp -d "${TMPDIR:-/tmp}/purge-cmake.XXXXXX")
trap 'rm -rf "$work"' EXIT
consumer="$root/.ci/consumers/cmake"

install_kind() { # KIND: meson build of the library alone, installed into $work/KIND
	local kind=$1
	meson setup "$work/build-$kind" "$root" --prefix="$work/$kind" -Ddefault_library="$kind" \
		-Dtests=false -Dtools=false -Dexamples=false -Dman=false -Dwerror=true \
		>"$work/build-$kind.log" 2>&1 || { cat "$work/build-$kind.log" >&2; die "meson setup ($kind) failed"; }
	if ! { ninja -C "$work/build-$kind" && meson install -C "$work/build-$kind" --quiet; } \
		>>"$work/build-$kind.log" 2>&1; then
		cat "$work/build-$kind.log" >&2
		die "build or install ($kind) failed"
	fi
	libdir=$(meson introspect "$work/build-$kind" --buildoptions |
		python3 -c 'import json, sys; print({o["name"]: o["value"] for o in json.load(sys.stdin)}["libdir"])')
	for f in purgeConfig.cmake purgeConfigVersion.cmake; do
		[ -f "$work/$kind/$libdir/cmake/purge/$f" ] || die "not installed: <prefix>/$libdir/cmake/purge/$f"
	done
}

configure() { # NAME PREFIX [cmake -D...]: configure the consumer; fails like cmake
	local name=$1 prefix=$2
	shift 2
	cmake -S "$consumer" -B "$work/c-$name" -DCMAKE_PREFIX_PATH="$prefix" \
		-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "$@" >"$work/c-$name.log" 2>&1
}

use() { # NAME PREFIX LINK(shared|static) [cmake -D...]: configure, build, run, check
	local name=$1 prefix=$2 link=$3 needed found loaded
	shift 3
	configure "$name" "$prefix" "$@" || { cat "$work/c-$name.log" >&2; die "$name: cmake configure failed"; }
	found=$(sed -n 's/^purge_DIR:PATH=//p' "$work/c-$name/CMakeCache.txt")
	[ "$found" = "$prefix/$libdir/cmake/purge" ] || die "$name: found purge in '$found', not in $prefix"
	cmake --build "$work/c-$name" >>"$work/c-$name.log" 2>&1 ||
		{ cat "$work/c-$name.log" >&2; die "$name: build failed"; }
	needed=$(readelf -d "$work/c-$name/consumer" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
	if [ "$link" = shared ]; then
		grep -q 'libpurge\.so\.2' <<<"$needed" || die "$name: does not need libpurge.so.2 ($needed)"
		loaded=$(env -u LD_LIBRARY_PATH ldd "$work/c-$name/consumer")
		grep -qF "=> $prefix/$libdir/libpurge.so.2" <<<"$loaded" ||
			die "$name: does not load libpurge.so.2 from $prefix:"$'\n'"$loaded"
	elif grep -q libpurge <<<"$needed"; then
		die "$name: linked statically but needs $needed"
	fi
	env -u LD_LIBRARY_PATH "$work/c-$name/consumer" >/dev/null || die "$name: the program failed"
	echo "check-cmake: $name: ok ($link)"
}

refused() { # NAME PREFIX WHY [cmake -D...]: find_package must fail, saying WHY
	local name=$1 prefix=$2 why=$3
	shift 3
	if configure "$name" "$prefix" "$@"; then
		die "$name: find_package accepted it"
	fi
	# the right refusal, not some other error (cmake wraps long messages)
	tr -s ' \n' ' ' <"$work/c-$name.log" | grep -qF "$why" ||
		{ cat "$work/c-$name.log" >&2; die "$name: refused, but not with '$why'"; }
	echo "check-cmake: $name: refused, as it should be"
}

install_kind both
p="$work/both"
use shared "$p" shared
use static "$p" static -DPURGE_TARGET=purge::purge_static
use shared-target "$p" shared -DPURGE_TARGET=purge::purge_shared
# the project's own version, from meson.build
minor=$(sed -n "s/^  version: '2\.\([0-9]*\)\.[0-9]*',/\1/p" "$root/meson.build")
[ -n "$minor" ] || die "no 2.x version in meson.build"
use version-2.0 "$p" shared -DPURGE_VERSION_WANTED=2.0
use "version-2.$minor" "$p" shared -DPURGE_VERSION_WANTED="2.$minor"
use version-range "$p" shared "-DPURGE_VERSION_WANTED=2...<3"
use components "$p" static -DPURGE_COMPONENTS='shared;static' -DPURGE_TARGET=purge::purge_static
incompatible='compatible with requested version'
refused version-1 "$p" "$incompatible" -DPURGE_VERSION_WANTED=1
refused version-3 "$p" "$incompatible" -DPURGE_VERSION_WANTED=3
refused "version-2.$((minor + 1))" "$p" "$incompatible" -DPURGE_VERSION_WANTED="2.$((minor + 1))"
refused bad-component "$p" "without component 'nonesuch'" -DPURGE_COMPONENTS=nonesuch
# A 32-bit project must not take the 64-bit install (where -m32 works).
if echo 'int main(void) { return 0; }' | "${CC:-cc}" -m32 -x c - -o "$work/m32" 2>/dev/null; then
	# (purge_DIR: a 32-bit project does not even search lib/x86_64-linux-gnu)
	refused other-pointer-size "$p" "bit)" -DCMAKE_C_FLAGS=-m32 -Dpurge_DIR="$p/$libdir/cmake/purge"
else
	echo "check-cmake: other-pointer-size: skipped (no -m32 toolchain)"
fi

# Moved: the package finds its files relative to itself.
mv "$p" "$work/moved"
use moved "$work/moved" shared
use moved-static "$work/moved" static -DPURGE_TARGET=purge::purge_static

install_kind shared
use shared-only "$work/shared" shared
refused shared-only-static "$work/shared" "without component 'static'" -DPURGE_COMPONENTS=static

install_kind static
use static-only "$work/static" static
refused static-only-shared "$work/static" "without component 'shared'" -DPURGE_COMPONENTS=shared

echo "check-cmake: ok ($(cmake --version | head -1))"
