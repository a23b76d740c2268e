#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build.sh: mimalloc 3.4.3 with the batched purge series (patches/3.4.3;
# it calls the kernel itself, no libpurge), as a libmimalloc.so.3 that
# preloads in front of any program, as mimalloc's own does; from
# ../shared/sources/mimalloc-3.4.3.tar.xz or --source.  See README.md
# beside this script (also for what became of the retired 2.0.9 series).
#
# usage: build.sh --help (the options are integrations/common/build-args.sh,
# the same for every allocator; -l/--libpurge is accepted and not used),
# plus mimalloc's own:
#   --asan      MI_TRACK_ASAN=ON (a Debug build)
#   --debug     a Debug build with MI_DEBUG_FULL=ON (full invariant checks)
#   --no-tests  leave out mimalloc's test programs (MI_BUILD_TESTS=OFF)
#   --v3        accepted for the older spelling (v3 is the only version)
#   -- CMAKE_ARGS  added to cmake's options
# The build goes to OUTDIR/VARIANT (v3-patched or v3-stock, with -asan or
# -debug appended); the library is OUTDIR/VARIANT/build/libmimalloc*.so.3.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
version=3.4.3
asan=0 debug=0 tests=ON

allocator=mimalloc
src_usage="the 3.4.3 release tarball,
                        ../shared/sources/mimalloc-3.4.3.tar.xz"
own_usage="mimalloc's own:
      --asan            MI_TRACK_ASAN=ON (a Debug build)
      --debug           a Debug build with MI_DEBUG_FULL=ON (every invariant checked)
      --no-tests        leave out mimalloc's test programs (MI_BUILD_TESTS=OFF)
      --v3              accepted (mimalloc 3.4.3 is the only version; default
                        source: ../shared/sources/mimalloc-3.4.3.tar.xz)
  -- CMAKE_ARGS         added to cmake's options"
rest_usage="CMAKE_ARGS..."
own_option() {
	own_shift=1
	case $1 in
	--asan) asan=1 ;;
	--debug) debug=1 ;;
	--no-tests) tests=OFF ;;
	--v3) ;;
	*) own_shift=0 ;;
	esac
}
# shellcheck source=integrations/common/build-args.sh
. "$repo/integrations/common/build-args.sh"
build_args "$@"
source=$src
needs cmake patch tar

variant=v3-$([ $stock = 1 ] && echo stock || echo patched)
[ $asan = 1 ] && variant+=-asan
[ $debug = 1 ] && variant+=-debug

# ---- the source: the shared tarball (a git archive of v3.4.3) or --source
if [ -z "$source" ]; then
	source=$repo/../shared/sources/mimalloc-$version.tar.xz
	[ -f "$source" ] || { echo "build.sh: no mimalloc $version source: no --source and no $source" >&2; exit 77; }
fi
if [ -d "$source" ]; then
	src=$(cd "$source" && pwd)
elif [ -f "$source" ]; then
	src=$out/mimalloc-$version
	if [ ! -f "$src/.unpacked-from" ] || [ "$(cat "$src/.unpacked-from")" != "$(cd "$(dirname "$source")" && pwd)/$(basename "$source")" ]; then
		rm -rf "$src" "$out/unpack-v3"
		mkdir -p "$out/unpack-v3"
		tar -xf "$source" -C "$out/unpack-v3"
		mv "$out"/unpack-v3/* "$src"
		rmdir "$out/unpack-v3"
		echo "$(cd "$(dirname "$source")" && pwd)/$(basename "$source")" >"$src/.unpacked-from"
	fi
else
	echo "build.sh: $source: neither a tree nor a tarball" >&2
	exit 2
fi
grep -q "set(mi_version_major 3)" "$src/cmake/mimalloc-config-version.cmake" &&
	grep -q "set(mi_version_minor 4)" "$src/cmake/mimalloc-config-version.cmake" ||
	echo "build.sh: warning: $src does not say it is mimalloc 3.4; the patches may not apply" >&2
# a build of the same inputs is taken as it is (build-args.sh's build_reuse)
inputs=("$src" "$here/build.sh" "$repo/integrations/common/build-args.sh")
[ $stock = 1 ] || inputs+=("$here/patches")
key=$(build_key "$variant" "$tests" ${rest[@]+"${rest[@]}"} -- "${inputs[@]}")
lib=$(find "$out/$variant/build" -maxdepth 1 -name 'libmimalloc*.so.3' 2>/dev/null | head -1 || true)
build_reuse "$out/$variant/.build-key" "${lib:-$out/$variant/build/libmimalloc.so.3}" "$key"
tree=$out/$variant/src
rm -rf "$tree"
mkdir -p "$out/$variant"
cp -a "$src" "$tree"
rm -f "$tree/.unpacked-from"
if [ $stock = 0 ]; then
	while read -r p; do
		case $p in '' | '#'*) continue ;; esac
		patch -d "$tree" -p1 --quiet --no-backup-if-mismatch <"$here/patches/$version/$p" ||
			{ echo "build.sh: patches/$version/$p does not apply to $src" >&2; exit 1; }
	done <"$here/patches/$version/series"
fi
cmake_args=(-DMI_BUILD_STATIC=OFF -DMI_BUILD_OBJECT=OFF -DMI_BUILD_TESTS=$tests)
if [ $asan = 1 ]; then
	cmake_args+=(-DMI_TRACK_ASAN=ON -DCMAKE_BUILD_TYPE=Debug)
elif [ $debug = 1 ]; then
	cmake_args+=(-DMI_DEBUG_FULL=ON -DCMAKE_BUILD_TYPE=Debug)
else
	cmake_args+=(-DCMAKE_BUILD_TYPE=Release)
fi
bdir=$out/$variant/build
rm -rf "$bdir"
cmake -S "$tree" -B "$bdir" "${cmake_args[@]}" ${rest[@]+"${rest[@]}"} >"$out/$variant/cmake.log" 2>&1 ||
	{ tail -20 "$out/$variant/cmake.log" >&2; exit 1; }
cmake --build "$bdir" -j "$jobs" >"$out/$variant/build.log" 2>&1 ||
	{ grep -B2 -A8 -m3 'error' "$out/$variant/build.log" >&2 || tail -30 "$out/$variant/build.log" >&2; exit 1; }
lib=$(ls "$bdir"/libmimalloc*.so.3 2>/dev/null | head -1)
[ -n "$lib" ] || { echo "build.sh: no libmimalloc*.so.3 in $bdir" >&2; exit 1; }
build_stamp "$out/$variant/.build-key" "$key"
build_done "$lib"
