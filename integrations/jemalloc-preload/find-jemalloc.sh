# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# Sourced by test-shim.sh and test-cpython.sh: sets je to the
# libjemalloc.so.2 to preload ($JEMALLOC_LIB, else the loader's cache, else
# the usual places), or exits 77 (meson: skipped) when there is none.

find_jemalloc() {
	if [ -n "${JEMALLOC_LIB:-}" ]; then
		[ -r "$JEMALLOC_LIB" ] && echo "$JEMALLOC_LIB"
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

je=$(find_jemalloc)
if [ -z "$je" ]; then
	echo "SKIP: libjemalloc.so.2 not found (install libjemalloc2 or set JEMALLOC_LIB)"
	exit 77
fi

