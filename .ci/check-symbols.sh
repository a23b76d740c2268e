#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Check the ABI surface of the shared library.
# Usage: .ci/check-symbols.sh LIBPATH   (e.g. build/libpurge.so)
#  - it exports exactly the purge_* symbols that src/purge.map lists, each
#    with a version node from that map;
#  - its soname carries a major version equal to PURGE_VERSION_MAJOR;
#  - it imports nothing that allocates, starts threads or handles signals:
#    the library is called from inside allocators (design.md, contract 1).
set -euo pipefail

lib=${1:?usage: $0 LIBPATH}
root=$(cd "$(dirname "$0")/.." && pwd)
map="$root/src/purge.map"
fail=0
err() { echo "check-symbols: $*" >&2; fail=1; }

[ -f "$lib" ] || { echo "check-symbols: $lib: no such file" >&2; exit 1; }
if ! grep -q 'Type:.*DYN' <<<"$(readelf -h "$lib")"; then
	echo "check-symbols: $lib is not a shared object" >&2
	exit 1
fi

# 1. Exports.  nm prints NAME@@NODE for versioned symbols and the version
#    nodes themselves as absolute (A) symbols; neither is an API name.
expected=$(grep -oE '^[[:space:]]*purge_[A-Za-z0-9_]+;' "$map" | tr -d ' \t;' | sort -u)
nodes=$(grep -oE '^[A-Z][A-Z0-9_.]*' "$map" | sort -u)
[ -n "$expected" ] || { echo "check-symbols: no symbols in $map" >&2; exit 1; }
exports=$(nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }')
exported=$(printf '%s\n' "$exports" | sed 's/@.*//' | sort -u)
if [ "$exported" != "$expected" ]; then
	err "exports differ from src/purge.map (< map, > library):"
	diff <(printf '%s\n' "$expected") <(printf '%s\n' "$exported") >&2 || true
fi
while read -r sym; do
	node=${sym#*@}
	node=${node#@}
	if [ "$node" = "$sym" ] || ! grep -qx "$node" <<<"$nodes"; then
		err "$sym: not bound to a version node of src/purge.map"
	fi
done <<<"$exports"

# 2. Soname with a major version that matches the header.
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
major=$(sed -n 's/^#define PURGE_VERSION_MAJOR \([0-9]*\).*/\1/p' "$root/include/purge.h")
if ! [[ $soname =~ ^libpurge\.so\.([0-9]+)$ ]]; then
	err "soname '${soname:-<none>}' is not libpurge.so.MAJOR"
elif [ "${BASH_REMATCH[1]}" != "$major" ]; then
	err "soname $soname does not match PURGE_VERSION_MAJOR $major"
fi

# 3. Forbidden imports.
forbidden='malloc calloc realloc reallocarray free posix_memalign aligned_alloc
	memalign valloc pvalloc strdup strndup pthread_create signal sigaction
	bsd_signal sysv_signal __sysv_signal sigset'
imports=$(nm -D --undefined-only "$lib" | awk '{ print $2 }' | sed 's/@.*//' | sort -u)
for f in $forbidden; do
	grep -qx "$f" <<<"$imports" && err "imports $f"
done

if [ $fail -ne 0 ]; then
	echo "check-symbols: FAILED ($lib)" >&2
	exit 1
fi
echo "check-symbols: $(wc -l <<<"$expected") symbols, soname $soname, no forbidden imports: ok"
