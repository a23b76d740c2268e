#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install a configured build into a scratch DESTDIR and use it the way a
# distribution's user would: find the header and the library through
# pkg-config only, build .ci/consumer.c against what default_library
# installed (shared, static or both), and run it.  Also checks that every
# file meson lists as installed is there, the CMake package files, and,
# with tools, purge-bench and the plot.gp it was built to find, and that
# the installed purge-bench runs without LD_LIBRARY_PATH: the staged tree
# is a prefix that no loader path names, as a custom --prefix is.
# Usage: .ci/check-install.sh BUILDDIR     (CC overrides the compiler)
set -euo pipefail

build=${1:?usage: $0 BUILDDIR}
root=$(cd "$(dirname "$0")/.." && pwd)
cc=${CC:-cc}
die() { echo "check-install: $*" >&2; exit 1; }

[ -f "$build/meson-info/meson-info.json" ] || die "$build is not a meson build directory"
build=$(cd "$build" && pwd)
dest=$(mktemp -d "${TMPDIR:-/tmp}/purge-install.XXXXXX")
trap 'rm -rf "$dest"' EXIT

meson install -C "$build" --destdir "$dest" --quiet ||
	die "meson install failed"

# Where meson put things, from the build's own options.
read -r prefix libdir includedir mandir bindir datadir man kind tools install < <(
	meson introspect "$build" --buildoptions | python3 -c 'import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
on = lambda v: v in (True, "true", "auto")  # auto: on at top level
print(o["prefix"], o["libdir"], o["includedir"], o["mandir"], o["bindir"], o["datadir"],
      on(o.get("man", True)), o["default_library"], on(o.get("tools", True)),
      on(o.get("install", True)))')
[ "$install" = True ] || die "$build was configured with install=false: nothing to check"
abs() { case $1 in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }
libdir_opt=$libdir bindir_opt=$bindir
libdir=$(abs "$libdir")
includedir=$(abs "$includedir")
mandir=$(abs "$mandir")
bindir=$(abs "$bindir")
datadir=$(abs "$datadir")

# Everything meson says it installs is there.
missing=$(meson introspect "$build" --installed | python3 -c 'import json, os, sys
for dst in json.load(sys.stdin).values():
    if not os.path.lexists(sys.argv[1] + dst):
        print(dst)' "$dest")
[ -z "$missing" ] || die "listed by meson but not installed: $missing"

for f in "$includedir/purge.h" "$libdir/pkgconfig/purge.pc" \
	"$libdir/cmake/purge/purgeConfig.cmake" "$libdir/cmake/purge/purgeConfigVersion.cmake"; do
	[ -f "$dest$f" ] || die "not installed: $f"
done
have_shared=false have_static=false
if [ "$kind" != static ]; then
	have_shared=true
	ls "$dest$libdir"/libpurge.so.* >/dev/null 2>&1 || die "not installed: $libdir/libpurge.so.*"
fi
if [ "$kind" != shared ]; then
	have_static=true
	[ -f "$dest$libdir/libpurge.a" ] || die "not installed: $libdir/libpurge.a"
fi
if [ "$tools" = True ]; then
	[ -x "$dest$bindir/purge-bench" ] || die "not installed: $bindir/purge-bench"
	[ -f "$dest$datadir/libpurge/plot.gp" ] || die "not installed: $datadir/libpurge/plot.gp"
	grep -qaF "$datadir/libpurge/plot.gp" "$dest$bindir/purge-bench" ||
		die "the installed purge-bench does not look for $datadir/libpurge/plot.gp"
	if grep -qaF "$root/bench/purge-bench/plot.gp" "$dest$bindir/purge-bench"; then
		die "the installed purge-bench points into the source tree"
	fi
fi
if [ "$man" = True ]; then
	for p in "$root"/man/*.[1-9]; do
		n=$(basename "$p")
		[ -f "$dest$mandir/man${n##*.}/$n" ] || die "man page not installed: $n"
	done
	# and the links that man/meson.build makes with install_symlink()
	links=$(grep -oE "install_symlink\('[^']+'" "$root/man/meson.build" | cut -d"'" -f2)
	while read -r n; do
		[ -z "$n" ] || [ -e "$dest$mandir/man${n##*.}/$n" ] ||
			die "man page link not installed: $n"
	done <<<"$links"
fi

# pkg-config sees only the staged tree: LIBDIR replaces the system search
# path, SYSROOT prefixes every -I and -L with $dest.  System flags are kept
# so that a /usr prefix is not silently dropped.
export PKG_CONFIG_LIBDIR="$dest$libdir/pkgconfig"
export PKG_CONFIG_PATH=""
export PKG_CONFIG_SYSROOT_DIR="$dest"
export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
cflags=$(pkg-config --cflags purge) || die "pkg-config does not find purge"
libs=$(pkg-config --libs purge)
static_libs=$(pkg-config --static --libs purge)
echo "check-install: cflags: $cflags"
echo "check-install: libs: $libs | static: $static_libs"

out="$dest/consumer"
mkdir -p "$out"
warn=(-std=gnu11 -Wall -Wextra -Werror)

# The header must come from the staged tree, not from a system copy.
# shellcheck disable=SC2086
deps=$("$cc" "${warn[@]}" $cflags -M "$root/.ci/consumer.c") || die "cannot preprocess consumer.c"
grep -q "$dest$includedir/purge.h" <<<"$deps" ||
	die "purge.h was not found through pkg-config in $dest"

# Shared: link through pkg-config, run with the staged library.
if $have_shared; then
	# shellcheck disable=SC2086
	"$cc" "${warn[@]}" $cflags "$root/.ci/consumer.c" -o "$out/shared" $libs ||
		die "shared link failed"
	loaded=$(LD_LIBRARY_PATH="$dest$libdir" ldd "$out/shared")
	grep -q "$dest$libdir/libpurge.so" <<<"$loaded" ||
		die "the shared consumer does not load the staged libpurge.so"
	LD_LIBRARY_PATH="$dest$libdir" "$out/shared" || die "shared consumer failed"
fi

# Static: pkg-config --static for the private libraries, and libpurge.a in
# place of -lpurge (the linker would pick the .so beside it).
if $have_static; then
	static_libs=$(sed -E 's/(^| )-lpurge( |$)/\1-l:libpurge.a\2/' <<<"$static_libs")
	# shellcheck disable=SC2086
	"$cc" "${warn[@]}" $cflags "$root/.ci/consumer.c" -o "$out/static" $static_libs ||
		die "static link failed"
	if grep -q 'NEEDED.*libpurge' <<<"$(readelf -d "$out/static")"; then
		die "the static consumer still needs libpurge.so"
	fi
	env -u LD_LIBRARY_PATH "$out/static" || die "static consumer failed"
fi

# The installed purge-bench loads the staged libpurge.so.2, found through
# its own RUNPATH (relative to $ORIGIN), and runs, with no LD_LIBRARY_PATH.
if [ "$tools" = True ] && $have_shared; then
	bench="$dest$bindir/purge-bench"
	case $libdir_opt$bindir_opt in
	/*) echo "check-install: purge-bench from the staged tree skipped: an absolute" \
		"libdir or bindir gets an absolute RUNPATH, which names the real prefix" ;;
	*)
		found=$(env -u LD_LIBRARY_PATH ldd "$bench" | awk '$1 == "libpurge.so.2" && $3 != "not" { print $3 }')
		[ -n "$found" ] && [ "$(readlink -f "$found")" = "$(readlink -f "$dest$libdir/libpurge.so.2")" ] ||
			die "the installed purge-bench does not find the libpurge.so.2 installed with it" \
				"without LD_LIBRARY_PATH (found: ${found:-nothing}; RUNPATH:" \
				"$(readelf -d "$bench" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p'))"
		env -u LD_LIBRARY_PATH "$bench" --size 1M --repeat 1 --batch 1 >/dev/null 2>&1 ||
			die "the installed purge-bench does not run without LD_LIBRARY_PATH"
		echo "check-install: the installed purge-bench runs without LD_LIBRARY_PATH" ;;
	esac
fi

echo "check-install: ok ($kind: shared $have_shared, static $have_static; prefix $prefix, libdir $libdir)"
