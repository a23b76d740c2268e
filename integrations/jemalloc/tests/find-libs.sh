# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# Sourced by the tests that compare the patched jemalloc with jemalloc
# without the patches.  Sets
#   lib    the patched libjemalloc.so.2: $JEMALLOC_PATCHED, else build.sh's
#          output (integrations-build/jemalloc/lib/libjemalloc.so.2, build.sh's default)
#   stock  a libjemalloc.so.2 without the patches (only when need_stock=1):
#          $JEMALLOC_LIB, else build.sh --stock's beside the patched one
#          (OUTDIR/stock/lib: the same jemalloc version), else the loader's
#          cache (Debian's 5.3.0), else the usual places
# or exits 77 (meson: skipped), saying what is missing.  repo must be set.
lib=${JEMALLOC_PATCHED:-$repo/integrations-build/jemalloc/lib/libjemalloc.so.2}
if [ ! -f "$lib" ]; then
	echo "SKIP: no patched jemalloc at $lib: run integrations/jemalloc/build.sh" \
		"(it needs jemalloc 5.3.1's source, or -s TREE|TARBALL), or set JEMALLOC_PATCHED"
	exit 77
fi
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")

find_stock() {
	if [ -n "${JEMALLOC_LIB:-}" ]; then
		[ -r "$JEMALLOC_LIB" ] && echo "$JEMALLOC_LIB"
		return
	fi
	p=$(dirname "$lib")/../stock/lib/libjemalloc.so.2
	if [ -r "$p" ]; then
		echo "$(cd "$(dirname "$p")" && pwd)/libjemalloc.so.2"
		return
	fi
	p=$(/sbin/ldconfig -p 2>/dev/null | awk '/libjemalloc\.so\.2 /{print $NF; exit}')
	if [ -n "$p" ] && [ -r "$p" ]; then
		echo "$p"
		return
	fi
	for p in /usr/lib/*/libjemalloc.so.2 /usr/lib64/libjemalloc.so.2 \
		/usr/lib/libjemalloc.so.2 /usr/local/lib/libjemalloc.so.2; do
		[ -r "$p" ] && { echo "$p"; return; }
	done
}
if [ "${need_stock:-0}" = 1 ]; then
	stock=$(find_stock)
	if [ -z "$stock" ]; then
		echo "SKIP: no libjemalloc.so.2 without the patches to compare with" \
			"(run integrations/jemalloc/build.sh --stock, install libjemalloc2, or set JEMALLOC_LIB)"
		exit 77
	fi
fi
