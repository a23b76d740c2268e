#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# build.sh: jemalloc with its own purging routed through libpurge, as a
# libjemalloc.so.2 that preloads in front of any jemalloc program.
#
#   1. libpurge: a static, position-independent build (meson), or the
#      build directory given with -l/--libpurge;
#   2. jemalloc 5.3.1's source: ../shared/sources/jemalloc-5.3.1.tar.xz (a
#      git archive of the tag: VERSION is written and autoconf run here), or
#      the tree or tarball given with -s/--source (jemalloc's dev branch...);
#   3. the patch series patches/<version>/series (patch -p1; 5.3.1's for a
#      version that has none), autoconf, configure --with-libpurge, make.
#
# usage: build.sh --help (the options are integrations/common/build-args.sh,
# the same for every allocator).  The words after -- replace the default
# configure options (Debian's on amd64: --with-lg-page=12
# --with-lg-hugepage=21 --enable-prof).
#
# The built library is OUTDIR/lib/libjemalloc.so.2 (OUTDIR/stock/lib/ with
# --stock); the built source tree is OUTDIR/jemalloc (OUTDIR/stock/jemalloc),
# where `make check` runs (tests/make-check.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

allocator=jemalloc
own_usage="      --jemalloc VERSION  5.3.1, the only series (the release tarball in
                        ../shared/sources, or --source)
  -- CONFIGURE_ARGS    replace jemalloc's default configure options"
rest_usage="CONFIGURE_ARGS..."
src_usage="the 5.3.1 release tarball,
                        ../shared/sources/jemalloc-5.3.1.tar.xz"
jeversion=5.3.1
own_option() {
	own_shift=0
	case $1 in
	--jemalloc)
		[ $# -ge 2 ] || bad_usage "--jemalloc wants a version"
		case $2 in
		5.3.1) jeversion=$2 ;;
		*) bad_usage "--jemalloc: 5.3.1 (the 5.3.0 series is retired), not '$2'" ;;
		esac
		own_shift=2 ;;
	esac
}
# shellcheck source=integrations/common/build-args.sh
. "$repo/integrations/common/build-args.sh"
build_args "$@"
if [ -z "$src" ]; then
	src=$(cd "$repo/.." && pwd)/shared/sources/jemalloc-$jeversion.tar.xz
	[ -f "$src" ] || { echo "build.sh: no jemalloc $jeversion source: $src is missing (give --source)" >&2; exit 77; }
fi
confargs=("${rest[@]}")
if [ ${#rest[@]} -eq 0 ]; then
	case $(uname -m) in
	x86_64 | i?86) confargs=(--with-lg-page=12) ;;
	*) confargs=(--with-lg-page=16) ;;
	esac
	confargs+=(--with-lg-hugepage=21)
	case $(uname -m) in x86_64 | i?86) confargs+=(--enable-prof) ;; esac
	# jemalloc 5.3.1 (opt.process_madvise_max_batch) finds process_madvise
	# only through <sys/pidfd.h>'s PIDFD_SELF, which glibc before 2.41 lacks;
	# without it the option is silently clipped to 0.  The syscall is 440 on
	# x86_64 and on the generic table (aarch64); applied after the source is
	# unpacked, when its configure.ac has the option.
	case $(uname -m) in x86_64 | aarch64) pmadv_nr=440 ;; *) pmadv_nr="" ;; esac
fi
log() { printf 'build.sh: %s\n' "$*" >&2; }
needs make cc patch tar

# ---- 1. jemalloc's source ----------------------------------------------------
[ -e "$src" ] || { log "no jemalloc source at $src"; exit 1; }
src=$(cd "$(dirname "$src")" && pwd)/$(basename "$src")

if [ $stock -eq 1 ]; then
	dest=$out/stock
	inputs=()
else
	dest=$out
	# what the patched build is made of besides the source: the series,
	# and libpurge (its sources, or the archive given with --libpurge)
	inputs=("$here/patches")
	if [ -z "$lpdir" ]; then
		inputs+=("$repo/src" "$repo/include" "$repo/meson.build" "$repo/meson_options.txt")
	else
		inputs+=("$lpdir/libpurge.a")
	fi
fi
key=$(build_key "stock=$stock" "$jeversion" "${confargs[@]}" "pmadv=${pmadv_nr:-}" "lp=$lpdir" -- \
	"$src" "$here/build.sh" "$repo/integrations/common/build-args.sh" "${inputs[@]}")
build_reuse "$dest/.build-key" "$dest/lib/libjemalloc.so.2" "$key"
tree=$dest/jemalloc
rm -rf "$tree.new"
mkdir -p "$tree.new"
if [ -d "$src" ]; then
	# a tree: copied, so that the patches never touch it
	(cd "$src" && tar cf - --exclude=.git .) | (cd "$tree.new" && tar xf -)
else
	tar xf "$src" -C "$tree.new" --strip-components=1
fi
rm -rf "$tree"
mv "$tree.new" "$tree"
[ -f "$tree/configure.ac" ] || { log "$src: not a jemalloc source (no configure.ac)"; exit 1; }
if [ ! -f "$tree/VERSION" ]; then
	# a git archive of a tag (../shared/sources/README.md): no VERSION, no
	# configure; the version comes from its top folder's name
	v=$(basename "$src" | sed -n 's/^jemalloc-\([0-9][0-9.]*[0-9]\)\(\.tar.*\)\{0,1\}$/\1/p')
	case $v in
	5.3.1) gid=81034ce1f1373e37dc865038e1bc8eeecf559ce8 ;;
	*) gid=0000000000000000000000000000000000000000 ;;
	esac
	[ -n "$v" ] || { log "$src: no VERSION file, and no version in its name"; exit 1; }
	echo "$v-0-g$gid" >"$tree/VERSION"
fi
if [ ! -f "$tree/configure" ]; then
	needs autoconf
	(cd "$tree" && autoconf)
fi
if [ -n "${pmadv_nr:-}" ] && grep -q experimental_sys_process_madvise "$tree/configure.ac"; then
	confargs+=(--with-experimental-sys-process-madvise="$pmadv_nr")
fi
version=$(sed 's/-.*//' "$tree/VERSION" 2>/dev/null || true)
[ -n "$version" ] || version=unknown
log "jemalloc $version from $src"

# ---- 2. the patches and libpurge -----------------------------------------------
conf=()
if [ $stock -eq 0 ]; then
	pdir=$here/patches/$version
	if [ ! -f "$pdir/series" ]; then
		log "no patches for $version: trying 5.3.1's"
		pdir=$here/patches/5.3.1
	fi
	while read -r p; do
		case $p in '' | '#'*) continue ;; esac
		log "patch $p"
		patch -d "$tree" -p1 -s --no-backup-if-mismatch <"$pdir/$p" ||
			{ log "$p does not apply to jemalloc $version"; exit 1; }
	done <"$pdir/series"

	if [ -z "$lpdir" ]; then
		lpdir=$out/libpurge
		needs meson ninja
		if [ ! -f "$lpdir/build.ninja" ]; then
			meson setup "$lpdir" "$repo" -Ddefault_library=static -Db_staticpic=true \
				-Dbuildtype=release -Dtests=false -Dtools=false -Dexamples=false \
				-Dman=false -Dinstall=false >"$out/libpurge-setup.log" ||
				{ log "meson setup failed: $out/libpurge-setup.log"; exit 1; }
		fi
		ninja -C "$lpdir" -j "$jobs" libpurge.a >/dev/null
	fi
	[ -f "$lpdir/libpurge.a" ] || { log "no libpurge.a in $lpdir"; exit 1; }
	# configure --with-libpurge wants a prefix: include/purge.h and
	# lib/libpurge.a, a regular archive (meson makes thin ones)
	stage=$out/libpurge-stage
	rm -rf "$stage"
	mkdir -p "$stage/include" "$stage/lib"
	cp "$repo/include/purge.h" "$stage/include/"
	members=$(cd "$lpdir" && ar t libpurge.a)
	# shellcheck disable=SC2086 # one member a word
	(cd "$lpdir" && ar rcs "$stage/lib/libpurge.a" $members)
	conf+=(--with-libpurge="$stage")
	needs autoconf # the patches change configure.ac
	# --force: once (2026-12-07) autoconf kept the configure it had made
	# from the unpatched configure.ac 19 ms before the patches (a git
	# archive has none), and the "patched" build was stock, with only
	# "unrecognized options: --with-libpurge" in configure.log; not
	# reproduced since.  The check after configure makes that a failure.
	(cd "$tree" && autoconf --force)
fi

# ---- 3. configure and make -------------------------------------------------------
log "configure ${confargs[*]} ${conf[*]}"
(cd "$tree" && ./configure "${confargs[@]}" "${conf[@]}" >"$dest/configure.log" 2>&1) ||
	{ log "configure failed: $dest/configure.log"; exit 1; }
if [ $stock -eq 0 ] && ! grep -q '^#define JEMALLOC_LIBPURGE' "$tree/include/jemalloc/internal/jemalloc_internal_defs.h"; then
	log "configure did not enable libpurge (see $dest/configure.log)"
	exit 1
fi
log "make -j$jobs"
(cd "$tree" && make -j"$jobs" build_lib_shared >"$dest/make.log" 2>&1) ||
	{ log "make failed: $dest/make.log"; tail -20 "$dest/make.log" >&2; exit 1; }

# the library is copied out of the tree and replaced atomically, so that a
# program that has it preloaded keeps running across rebuilds
mkdir -p "$dest/lib"
cp "$tree/lib/libjemalloc.so.2" "$dest/lib/.libjemalloc.so.2.new"
mv -f "$dest/lib/.libjemalloc.so.2.new" "$dest/lib/libjemalloc.so.2"
build_stamp "$dest/.build-key" "$key"
build_done "$dest/lib/libjemalloc.so.2"
