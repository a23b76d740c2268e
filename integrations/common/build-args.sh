# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# build-args.sh: the command line that every integrations/*/build.sh
# shares, sourced by them (bash).  One parser and one usage, so that the
# allocators' builds take the same options, exit with the same statuses and
# print the same thing.  Before sourcing it, a build.sh sets
#   allocator   its name (jemalloc, mimalloc): the default OUTDIR's last part
#   repo        the repository's root
#   own_usage   the usage lines of its own options ('' for none)
#   rest_usage  what the words after -- are for
#   src_usage   where its source comes from by default (one or two lines,
#               the second indented as the first's continuation)
# and defines own_option ARG...: sets own_shift to the number of words it
# took from the front, 0 when ARG is not one of its options.
# build_args "$@" then sets src lpdir out jobs stock prefix rebuild, and
# rest (an array: the words after --).  build_done LIB prints the result.
# build_reuse and build_stamp let a build whose inputs did not change be
# taken as it is (below).

build_usage() {
	local src_default=$src_usage
	cat <<EOF
usage: build.sh [OPTIONS] [OUTDIR] [-- $rest_usage]
Build $allocator patched to batch its purges (its README says how), as a
shared library that preloads in front of any program.  The last line on
stdout is the library's path (with --install, the installed copy's).
  -s, --source SOURCE   a $allocator source tree or tarball (default:
                        $src_default)
  -l, --libpurge DIR    a libpurge meson build directory holding a static,
                        position-independent libpurge.a (default: one is
                        built under OUTDIR)
  -o, --out OUTDIR      where everything goes (default: integrations-build/
                        $allocator in the repository: outside build/, so
                        that rm -rf build keeps it); a last word OUTDIR too
  -j, --jobs JOBS       parallel make jobs (default: \$JOBS, else 2); -jJOBS too
      --stock           the same source unpatched and without libpurge,
                        under OUTDIR/stock, for comparisons
      --rebuild         build again even when the last build in OUTDIR was
                        made of the same source, patches, libpurge sources,
                        options and compiler (without it, that build is
                        taken as it is)
      --install PREFIX  then copy the library into PREFIX/lib (replaced
                        atomically: running programs keep theirs), with a
                        .so link beside it
  -h, --help            this text; --OPTION=VALUE works too
${own_usage:+$own_usage
}Older spellings that still work: -s/-l/-o/-j (jemalloc's), --source,
--libpurge, an OUTDIR as the last word and JOBS in the environment
(mimalloc's).
Exit status: 0 built; 1 the build failed (stderr names the log); 2 bad
usage; 77 it cannot be built here: no source (no --source, and the default
one missing or unreachable) or a tool the build needs is missing (stderr says
which; the tests skip).
EOF
}

bad_usage() {
	echo "build.sh: $* (build.sh --help lists the options)" >&2
	exit 2
}

build_args() {
	src="" lpdir="" out="" jobs=${JOBS:-2} stock=0 prefix="" rebuild=0 rest=()
	local a pos=""
	while [ $# -gt 0 ]; do
		case $1 in
		--*=*) a=$1; shift; set -- "${a%%=*}" "${a#*=}" "$@"; continue ;;
		-s | --source | -l | --libpurge | -o | --out | -j | --jobs | --install)
			[ $# -ge 2 ] || bad_usage "$1 wants a value" ;;
		esac
		case $1 in
		-s | --source) src=$2; shift 2 ;;
		-l | --libpurge) lpdir=$2; shift 2 ;;
		-o | --out) out=$2; shift 2 ;;
		-j | --jobs) jobs=$2; shift 2 ;;
		-j*) jobs=${1#-j}; shift ;;
		--stock) stock=1; shift ;;
		--rebuild) rebuild=1; shift ;;
		--install) prefix=$2; shift 2; [ -n "$prefix" ] || bad_usage "--install wants a PREFIX" ;;
		-h | --help) build_usage; exit 0 ;;
		--) shift; rest=("$@"); break ;;
		-*)
			own_shift=0
			own_option "$@"
			[ "$own_shift" -gt 0 ] || bad_usage "unknown option $1"
			shift "$own_shift" ;;
		*)
			[ -z "$pos" ] || bad_usage "one OUTDIR only, not '$pos' and '$1'"
			pos=$1 out=$1; shift ;;
		esac
	done
	case $jobs in
	'' | *[!0-9]* | 0) bad_usage "-j wants a number of jobs, not '$jobs'" ;;
	esac
	[ -z "$src" ] || [ -e "$src" ] || bad_usage "no such source: $src"
	[ -n "$out" ] || out=$repo/integrations-build/$allocator
	mkdir -p "$out" || exit 1
	out=$(cd "$out" && pwd)
}

# needs TOOL...: exit 77, naming it, when a tool the build needs is missing
needs() {
	local t
	for t; do
		command -v "$t" >/dev/null || { echo "build.sh: needs $t, which is not installed" >&2; exit 77; }
	done
}

# build_done LIB: print LIB, or with --install copy it into PREFIX/lib (as a
# new file renamed over the old one) with a NAME.so link, and print that
build_done() {
	local lib=$1 name dir
	if [ -z "$prefix" ]; then
		echo "$lib"
		return
	fi
	name=$(basename "$lib")
	mkdir -p "$prefix/lib" || exit 1
	dir=$(cd "$prefix/lib" && pwd)
	cp -L "$lib" "$dir/.$name.new" && mv -f "$dir/.$name.new" "$dir/$name" ||
		{ echo "build.sh: could not install $dir/$name" >&2; exit 1; }
	[ "${name%.so.*}.so" = "$name" ] || ln -sfn "$name" "$dir/${name%.so.*}.so"
	echo "build.sh: installed $dir/$name" >&2
	echo "$dir/$name"
}

# build_key WORD... -- PATH...: one line that changes when any WORD (the
# options, versions), the compiler ($CC and the flags in the environment
# included), or the contents of a file under a PATH
# (the source, the patches, the build scripts) changes
build_key() {
	local w f
	{
		for w; do
			shift
			[ "$w" = -- ] && break
			printf 'word %s\n' "$w"
		done
		# the compilers and flags configure and cmake read from the environment
		printf 'env CC=%s CXX=%s CFLAGS=%s CXXFLAGS=%s LDFLAGS=%s\n' "${CC:-}" \
			"${CXX:-}" "${CFLAGS:-}" "${CXXFLAGS:-}" "${LDFLAGS:-}"
		printf 'cc %s\n' "$(${CC:-cc} --version 2>/dev/null | head -1)"
		for f; do
			find "$f" -type f ! -path '*/.git/*' -print0 | LC_ALL=C sort -z |
				xargs -0 -r sha256sum
		done
	} | sha256sum | cut -d' ' -f1
}

# build_reuse STAMP LIB KEY: when LIB is there and the build that made it
# wrote KEY into STAMP, print LIB (build_done) and exit 0: nothing it is
# made of changed.  Otherwise (or with --rebuild) remove STAMP, so that a
# build that stops half-way is never taken for a finished one, and return.
build_reuse() {
	if [ "$rebuild" = 0 ] && [ -f "$1" ] && [ -f "$2" ] && [ "$(cat "$1")" = "$3" ]; then
		echo "build.sh: $2 is up to date (the same source, patches, options and compiler; --rebuild builds it again)" >&2
		build_done "$2"
		exit 0
	fi
	rm -f "$1"
}

# build_stamp STAMP KEY: after a build that succeeded
build_stamp() {
	echo "$2" >"$1"
}
