#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Vendoring: another project copies include/purge.h and src/ into its tree
# and compiles the .c files with its own flags, without libpurge's build
# system.  For each compiler (gcc and clang, where present):
#  - every src/*.c compiles as it is with -std=c11 -Wall -Wextra -Werror
#    (no -D_GNU_SOURCE: src/compat.h sets what the sources need);
#  - the objects go into a scratch shared object with a file of the host
#    project's own (host_*), with no version script; a program built from
#    tests/smoke.c (also -std=c11) links against it and runs, and so does
#    one with the objects linked straight in;
#  - that shared object exports exactly the public purge_* functions of
#    src/purge.map and the host's own symbols: no purge__* internals;
#  - the one-file build, src/single/libpurge.c (every src/*.c in one
#    translation unit: no two files may use one static name), includes
#    every src/*.c, compiles alike and passes the same checks.
# Then the same export check for static archives linked whole into a
# shared object: BUILDDIR/libpurge.a (or one built here when BUILDDIR has
# none), and BUILDDIR/libpurge_internal.a where it exists.
# Usage: .ci/check-vendor.sh [BUILDDIR]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-}
die() { echo "check-vendor: $*" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/purge-vendor.XXXXXX")
trap 'rm -rf "$work"' EXIT

public=$(grep -oE '^[[:space:]]*purge_[A-Za-z0-9_]+;' "$root/src/purge.map" | tr -d ' \t;' | sort -u)
[ -n "$public" ] || die "no symbols in src/purge.map"

cat >"$work/host.c" <<'EOF'
/* The vendoring project's own code: one exported function. */
#include "purge.h"

int host_check(void);

int host_check(void)
{
	return purge_version() == PURGE_VERSION ? 0 : 1;
}
EOF
cat >"$work/main.c" <<'EOF'
int host_check(void);

int main(void)
{
	return host_check();
}
EOF

# Defined dynamic symbols of a shared object, one a line, without versions.
exports() { nm -D --defined-only "$1" | awk '$2 != "A" { print $3 }' | sed 's/@.*//' | sort -u; }

check_exports() { # SO WHAT HOST_SYMBOLS...
	local so=$1 what=$2 got want
	shift 2
	got=$(exports "$so")
	want=$(printf '%s\n' "$public" "$@" | sort -u)
	if grep -q '^purge__' <<<"$got"; then
		die "$what exports internals: $(grep '^purge__' <<<"$got" | tr '\n' ' ')"
	fi
	if [ "$got" != "$want" ]; then
		echo "check-vendor: $what: exports differ (< expected, > exported)" >&2
		diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") >&2 || true
		exit 1
	fi
}

for c in "$root"/src/*.c; do
	grep -qxF "#include \"../$(basename "$c")\"" "$root/src/single/libpurge.c" ||
		die "src/single/libpurge.c does not include src/$(basename "$c")"
done

ran=()
for cc in gcc clang; do
	command -v "$cc" >/dev/null || { echo "check-vendor: $cc not found, skipped"; continue; }
	o="$work/$cc"
	mkdir -p "$o"
	flags=(-std=c11 -Wall -Wextra -Werror -O2 -fPIC -I"$root/include")
	objs=()
	for c in "$root"/src/*.c; do
		n=$(basename "$c" .c)
		"$cc" "${flags[@]}" -c "$c" -o "$o/$n.o" || die "$cc: src/$n.c does not compile as it is"
		objs+=("$o/$n.o")
	done
	"$cc" "${flags[@]}" -c "$work/host.c" -o "$o/host.o"
	"$cc" "${flags[@]}" -c "$root/tests/smoke.c" -o "$o/smoke.o" ||
		die "$cc: tests/smoke.c does not compile with -std=c11"
	"$cc" "${flags[@]}" -c "$work/main.c" -o "$o/main.o"

	# In a shared object of the host's.
	"$cc" -shared -o "$o/libhost.so" "$o/host.o" "${objs[@]}" -pthread ||
		die "$cc: the shared object does not link"
	check_exports "$o/libhost.so" "$cc: vendored shared object" host_check
	"$cc" -o "$o/smoke-so" "$o/smoke.o" -L"$o" -lhost -Wl,-rpath,"$o" -pthread
	"$cc" -o "$o/main-so" "$o/main.o" -L"$o" -lhost -Wl,-rpath,"$o" -pthread
	"$o/main-so" || die "$cc: host_check failed"
	"$o/smoke-so" >/dev/null || die "$cc: the smoke test failed against the vendored shared object"
	PURGE_MODE=loop "$o/smoke-so" >/dev/null || die "$cc: the smoke test failed (PURGE_MODE=loop)"

	# Straight into a program.
	"$cc" -o "$o/smoke-static" "$o/smoke.o" "${objs[@]}" -pthread
	"$o/smoke-static" >/dev/null || die "$cc: the smoke test failed with the objects linked in"

	# One file.
	"$cc" "${flags[@]}" -c "$root/src/single/libpurge.c" -o "$o/one.o" ||
		die "$cc: src/single/libpurge.c does not compile (two files share a static name?)"
	"$cc" -shared -o "$o/libone.so" "$o/host.o" "$o/one.o" -pthread
	check_exports "$o/libone.so" "$cc: one-file shared object" host_check
	"$cc" -o "$o/smoke-one" "$o/smoke.o" "$o/one.o" -pthread
	"$o/smoke-one" >/dev/null || die "$cc: the smoke test failed with the one-file build"
	ran+=("$cc")
	echo "check-vendor: $cc: $(wc -w <<<"${objs[*]}") files, and the one-file build, compile with ${flags[*]:0:4}; exports ok; smoke ok"
done
[ ${#ran[@]} -gt 0 ] || die "no compiler"

# Archives from the meson build, linked whole into a shared object.
archives=()
if [ -n "$build" ] && [ -f "$build/libpurge.a" ]; then
	archives+=("$build/libpurge.a")
else
	if ! { meson setup "$work/build" "$root" -Ddefault_library=static -Dtests=false -Dtools=false \
		-Dexamples=false -Dman=false -Dinstall=false && ninja -C "$work/build"; } \
		>"$work/build.log" 2>&1; then
		cat "$work/build.log" >&2
		die "meson build of libpurge.a failed"
	fi
	archives+=("$work/build/libpurge.a")
fi
if [ -n "$build" ] && [ -f "$build/libpurge_internal.a" ]; then
	archives+=("$build/libpurge_internal.a")
fi
cc=${CC:-cc}
"$cc" -std=c11 -O2 -fPIC -I"$root/include" -c "$work/host.c" -o "$work/host.o"
for a in "${archives[@]}"; do
	"$cc" -shared -o "$work/wrap.so" "$work/host.o" -Wl,--whole-archive "$a" \
		-Wl,--no-whole-archive -pthread || die "$a does not link into a shared object"
	check_exports "$work/wrap.so" "$a linked into a shared object" host_check
	echo "check-vendor: $a in a shared object: exports ok"
done
echo "check-vendor: ok (${ran[*]}; $(wc -l <<<"$public") public symbols, no purge__*)"
