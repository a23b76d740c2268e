#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build.sh: mimalloc 2.0.9 (Debian 12's source) with its decommits and
# resets through libpurge, as a libmimalloc.so that preloads in front of any
# program, as mimalloc's own does.  See README.md beside this script.
#
# usage: build.sh [--source TREE|TARBALL] [--libpurge BUILDDIR] [--stock]
#                 [--asan] [--debug] [--no-tests] OUTDIR
#   --source    a mimalloc 2.0.9 source tree or its .orig tarball (default:
#               Debian's, through integrations/common/debian-source.sh,
#               downloaded once into OUTDIR/src)
#   --libpurge  a meson build directory of this libpurge with a static,
#               position-independent libpurge.a (default: one is built in
#               OUTDIR/libpurge-static)
#   --stock     the same source without the patches and without libpurge
#   --asan      mimalloc's MI_ASAN=ON (-fsanitize=address; a Debug build)
#   --debug     a Debug build with MI_DEBUG_FULL=ON (full invariant checks)
#   --no-tests  leave out mimalloc's test programs (MI_BUILD_TESTS=OFF)
# The build goes to OUTDIR/VARIANT (patched or stock, with -asan or -debug
# appended); the last line printed is the path of its libmimalloc*.so.
# Exit 77 when the source or cmake is not available (callers skip), 1 on
# errors.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
version=2.0.9
source= libpurge= stock=0 asan=0 debug=0 tests=ON
usage() { sed -n '7,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit "${1:-1}"; }
while [ $# -gt 0 ]; do
	case $1 in
	--source) source=$2; shift 2 ;;
	--libpurge) libpurge=$2; shift 2 ;;
	--stock) stock=1; shift ;;
	--asan) asan=1; shift ;;
	--debug) debug=1; shift ;;
	--no-tests) tests=OFF; shift ;;
	-h | --help) usage 0 ;;
	-*) echo "build.sh: unknown option $1" >&2; usage ;;
	*) break ;;
	esac
done
[ $# -eq 1 ] || usage
out=$(mkdir -p "$1" && cd "$1" && pwd)
command -v cmake >/dev/null || { echo "build.sh: no cmake" >&2; exit 77; }
jobs=${JOBS:-2}

variant=$([ $stock = 1 ] && echo stock || echo patched)
[ $asan = 1 ] && variant+=-asan
[ $debug = 1 ] && variant+=-debug

# ---- the source: a pristine tree in OUTDIR/mimalloc-2.0.9, unpacked once
if [ -z "$source" ]; then
	if [ ! -d "$out/mimalloc-$version" ]; then
		source=$(ls "$out"/src/mimalloc_${version}*.orig.tar.* 2>/dev/null | head -1 || true)
		if [ -z "$source" ]; then
			rc=0
			source=$("$repo/integrations/common/debian-source.sh" mimalloc "$out/src") || rc=$?
			[ $rc = 0 ] || exit $rc
		fi
	fi
fi
if [ -n "$source" ]; then
	if [ -d "$source" ]; then
		src=$(cd "$source" && pwd)
	elif [ -f "$source" ]; then
		rm -rf "$out/mimalloc-$version" "$out/unpack"
		mkdir -p "$out/unpack"
		tar -xf "$source" -C "$out/unpack"
		mv "$out"/unpack/* "$out/mimalloc-$version"
		rmdir "$out/unpack"
		src=$out/mimalloc-$version
	else
		echo "build.sh: no such source: $source" >&2
		exit 77
	fi
else
	src=$out/mimalloc-$version
fi
grep -q "set(mi_version_minor 0)" "$src/cmake/mimalloc-config-version.cmake" &&
	grep -q "set(mi_version_patch 9)" "$src/cmake/mimalloc-config-version.cmake" ||
	echo "build.sh: warning: $src does not say it is mimalloc $version; the patches may not apply" >&2

# ---- the tree to build: a copy, patched unless --stock
tree=$out/$variant/src
rm -rf "$tree"
mkdir -p "$out/$variant"
cp -a "$src" "$tree"
cmake_args=(-DMI_BUILD_STATIC=OFF -DMI_BUILD_OBJECT=OFF -DMI_BUILD_TESTS=$tests)
if [ $stock = 0 ]; then
	while read -r p; do
		case $p in '' | '#'*) continue ;; esac
		patch -d "$tree" -p1 --quiet --no-backup-if-mismatch <"$here/patches/$version/$p"
	done <"$here/patches/$version/series"
	# ---- libpurge: static and position-independent, linked into the .so
	if [ -z "$libpurge" ]; then
		libpurge=$out/libpurge-static
		command -v meson >/dev/null || { echo "build.sh: no meson to build libpurge" >&2; exit 77; }
		[ -f "$libpurge/build.ninja" ] ||
			meson setup "$libpurge" "$repo" -Ddefault_library=static -Db_staticpic=true \
				-Dbuildtype=release -Dtests=false -Dtools=false -Dexamples=false \
				-Dintegrations=false -Dman=false -Dinstall=false >"$out/libpurge-setup.log"
		# (a no-op when it is up to date)
		ninja -C "$libpurge" -j "$jobs" libpurge.a >"$out/libpurge-build.log"
	fi
	libpurge=$(cd "$libpurge" && pwd)
	[ -f "$libpurge/libpurge.a" ] || { echo "build.sh: no libpurge.a in $libpurge" >&2; exit 1; }
	cmake_args+=(-DMI_LIBPURGE_LIBRARY="$libpurge/libpurge.a" -DMI_LIBPURGE_INCLUDE_DIR="$repo/include")
fi
if [ $asan = 1 ]; then
	cmake_args+=(-DMI_ASAN=ON -DCMAKE_BUILD_TYPE=Debug)
elif [ $debug = 1 ]; then
	cmake_args+=(-DMI_DEBUG_FULL=ON -DCMAKE_BUILD_TYPE=Debug)
else
	cmake_args+=(-DCMAKE_BUILD_TYPE=Release)
fi

bdir=$out/$variant/build
rm -rf "$bdir"
cmake -S "$tree" -B "$bdir" "${cmake_args[@]}" >"$out/$variant/cmake.log" 2>&1 ||
	{ tail -20 "$out/$variant/cmake.log" >&2; exit 1; }
cmake --build "$bdir" -j "$jobs" >"$out/$variant/build.log" 2>&1 ||
	{ grep -B2 -A8 -m3 'error' "$out/$variant/build.log" >&2 || tail -30 "$out/$variant/build.log" >&2; exit 1; }
lib=$(ls "$bdir"/libmimalloc*.so.2 | head -1)
[ -n "$lib" ] || { echo "build.sh: no libmimalloc*.so.2 in $bdir" >&2; exit 1; }
echo "$lib"
