#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Other C libraries and machines, in the default configuration (tests on,
# tools, examples) with warnings as errors:
#  - musl (CC=musl-gcc) and 32-bit x86 (-m32): required;
#  - aarch64 (cross file, aarch64-linux-gnu-gcc; run under qemu-aarch64
#    where it is there): where the cross compiler is installed.
# Criterion exists for the build machine only, so each configuration must
# skip the Criterion suites cleanly (configure says "Criterion suites: NO")
# and still build and run everything else: the library, tests/smoke.c,
# examples/pagerun, the thread stress test and the fuzz driver, tools.
# The allocator integrations are not part of this project (integrations/ is
# a meson project of its own, of glibc programs).  Prints what ran.
# Usage: .ci/check-portability.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "check-portability: $*" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/purge-portability.XXXXXX")
trap 'rm -rf "$work"' EXIT
summary=()

# NAME WANT(regex on `file` output for the programs) RUNS(yes|no) ENV... -- MESON_ARGS...
port() {
	local name=$1 want=$2 runs=$3 b="$work/$1" envs=() tests smoke crit
	shift 3
	while [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	shift
	echo "check-portability: $name: meson setup ${envs[*]} $*"
	env "${envs[@]}" meson setup "$b" "$root" -Dwerror=true "$@" \
		>"$work/$name.log" 2>&1 || { cat "$work/$name.log" >&2; die "$name: meson setup failed"; }
	crit=$(sed -n 's/^ *Criterion suites *: *//p' "$work/$name.log")
	ninja -C "$b" >>"$work/$name.log" 2>&1 || { tail -40 "$work/$name.log" >&2; die "$name: build failed"; }
	file -L "$b/tests/smoke" "$b/examples/pagerun" "$b/bench/purge-bench" >"$work/$name.file"
	if grep -vqE "$want" "$work/$name.file"; then
		cat "$work/$name.file" >&2
		die "$name: programs are not what $name should make ($want)"
	fi
	# and the library is made for the same C library and machine
	grep -qF "$(readelf -h "$b/tests/smoke" | grep Machine)" <<<"$(readelf -h "$b/libpurge.so")" ||
		die "$name: libpurge.so is not for the programs' machine"
	if [ "$name" = musl ] && readelf -d "$b/libpurge.so" | grep -q 'NEEDED.*libc\.so\.6'; then
		die "musl: libpurge.so needs glibc's libc.so.6"
	fi
	if [ "$runs" = no ]; then
		summary+=("$name: built (library, smoke, pagerun, tools; Criterion suites: $crit); not run: ${norun:-no qemu-aarch64}")
		return
	fi
	meson test -C "$b" --print-errorlogs >"$work/$name.test" 2>&1 ||
		{ cat "$work/$name.test" >&2; die "$name: tests failed"; }
	for t in smoke smoke-loop example-pagerun example-pagerun-loop; do
		grep -qE "libpurge / $t +OK" "$work/$name.test" || die "$name: test $t did not run"
	done
	tests=$(sed -nE 's/^ *[0-9]+\/[0-9]+ libpurge(:[a-z]+)? \/ (.*[^ ]) +OK +[0-9.]+s$/\2/p' \
		"$work/$name.test" | tr '\n' ',' | sed 's/,$//; s/,/, /g')
	smoke=$(meson test -C "$b" smoke --verbose 2>&1 | grep -oE 'smoke: ok .*' | head -1)
	summary+=("$name: $(grep -cE ' OK ' "$work/$name.test") tests passed ($tests); $smoke; Criterion suites: $crit")
}

command -v musl-gcc >/dev/null || die "musl-gcc not found (apt-get install musl-tools)"
port musl 'ld-musl' yes CC=musl-gcc --

echo 'int main(void) { return 0; }' | cc -m32 -x c - -o "$work/m32-probe" 2>/dev/null ||
	die "cc -m32 cannot link (apt-get install gcc-multilib)"
if "$work/m32-probe"; then
	port m32 'ELF 32-bit .*Intel 80386' yes -- -Dc_args=-m32 -Dc_link_args=-m32
else
	# a kernel without IA32 emulation (CONFIG_IA32_EMULATION off, or
	# ia32_emulation=0): build as a cross build that meson does not run
	echo "check-portability: m32: this kernel does not run 32-bit programs: built only"
	cross32="$work/m32.ini"
	{
		echo "[binaries]"
		echo "c = ['cc', '-m32']"
		echo "[properties]"
		echo "needs_exe_wrapper = true"
		echo "[host_machine]"
		echo "system = 'linux'"
		echo "cpu_family = 'x86'"
		echo "cpu = 'i686'"
		echo "endian = 'little'"
	} >"$cross32"
	norun="this kernel runs no 32-bit programs" port m32 'ELF 32-bit .*Intel 80386' no -- --cross-file "$cross32"
fi

if command -v aarch64-linux-gnu-gcc >/dev/null; then
	cross="$work/aarch64.ini"
	runs=no
	{
		echo "[binaries]"
		echo "c = 'aarch64-linux-gnu-gcc'"
		echo "strip = 'aarch64-linux-gnu-strip'"
		if command -v qemu-aarch64 >/dev/null && [ -d /usr/aarch64-linux-gnu ]; then
			echo "exe_wrapper = ['qemu-aarch64', '-L', '/usr/aarch64-linux-gnu']"
			runs=yes
		fi
		echo "[host_machine]"
		echo "system = 'linux'"
		echo "cpu_family = 'aarch64'"
		echo "cpu = 'aarch64'"
		echo "endian = 'little'"
	} >"$cross"
	port aarch64 'ARM aarch64' "$runs" -- --cross-file "$cross"
else
	summary+=("aarch64: skipped (no aarch64-linux-gnu-gcc; Debian 12: gcc-aarch64-linux-gnu qemu-user, which replace gcc-multilib)")
fi

echo "check-portability: what ran:"
printf '  %s\n' "${summary[@]}"
echo "check-portability: ok"
