#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Compile, and where marked run, the examples of the man pages.
# Usage: .ci/check-man-examples.sh [BUILD_DIR]   (default: build, where
#        libpurge.so or libpurge.a must already be built; CC and CXX
#        override gcc, g++)
#
# In a page, the comment line right before an .EX block says what it is:
#   .\" example: c c++ run
# c    compile and link as C:   $CC -std=c11 -Wall -Wextra -Werror
# c++  the same source as C++:  $CXX -x c++ -Wall -Wextra -Werror
# run  run the C program (LD_LIBRARY_PATH=BUILD_DIR); it must exit 0
# text not a program (shell commands, output): left alone
# Every .EX block of an EXAMPLE section needs such a line, and every page
# of sections 3 and 7 needs at least one C example.  Roff escapes in the
# block (\e \- \& \(aq \(dq ...) are turned back into C first.
# README.md's Example (its first C block) is compiled as C too, with -c:
# the allocator's book-keeping it calls is only declared there.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" && pwd)
CC=${CC:-gcc}
CXX=${CXX:-g++}
fail=0
err() { echo "check-man-examples: $*" >&2; fail=1; }

[ -e "$build/libpurge.so" ] || [ -e "$build/libpurge.a" ] || {
	echo "check-man-examples: no libpurge.so or libpurge.a in $build: build first (ninja -C build)" >&2
	exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Writes $tmp/PAGE.N.c and a line "PAGE.N.c TAGS" per marked block to
# stdout; complains on stderr (exit 1) about unmarked blocks, unknown
# escapes and roff requests inside a program.
extract() {
	awk -v page="$1" -v dir="$tmp" '
	function fail(msg) { printf "%s:%d: %s\n", FILENAME, FNR, msg > "/dev/stderr"; bad = 1 }
	function unescape(s,    out, i, c, n, two) {
		out = ""
		for (i = 1; i <= length(s); i++) {
			c = substr(s, i, 1)
			if (c != "\\") { out = out c; continue }
			n = substr(s, ++i, 1)
			if (n == "e" || n == "\\") out = out "\\"
			else if (n == "-") out = out "-"
			else if (n == "&") out = out ""
			else if (n == "(") {
				two = substr(s, i + 1, 2); i += 2
				if (two == "aq") out = out "\047"
				else if (two == "dq") out = out "\""
				else if (two == "ti") out = out "~"
				else if (two == "ha") out = out "^"
				else if (two == "ga") out = out "`"
				else if (two == "rs") out = out "\\"
				else fail("unknown escape \\(" two)
			} else fail("unknown escape \\" n)
		}
		return out
	}
	/^\.SH/ { sec = $0; sub(/^\.SH[ \t]+/, "", sec); gsub(/"/, "", sec) }
	/^\.\\" example:/ { tags = $0; sub(/^\.\\" example:[ \t]*/, "", tags); next }
	/^\.EX/ {
		if (tags == "" && sec == "EXAMPLE") fail("EXAMPLE block without an example: comment")
		inblock = 1; text = tags != "" && tags !~ /^text/
		if (text) { n++; file = dir "/" page "." n ".c"; printf "" > file
			print page "." n ".c " tags }
		tags = ""; next
	}
	/^\.EE/ { if (text) close(file); inblock = 0; text = 0; next }
	inblock && text {
		if ($0 ~ /^[.\047]/) fail("roff request inside a program")
		print unescape($0) > file
	}
	END { exit bad }' "$2"
}

pages=("$root"/man/*.[1-9])
compiled=0 ran=0
for p in "${pages[@]}"; do
	name=$(basename "$p")
	if ! list=$(extract "$name" "$p"); then
		err "$name: see above"
		continue
	fi
	if [[ $name == *.[37] ]] && ! grep -qE '^[^ ]+ (.* )?c( |$)' <<<"$list"; then
		err "$name: no C example"
	fi
	while read -r file tags; do
		[ -n "$file" ] || continue
		src="$tmp/$file"
		exe="$tmp/${file%.c}"
		for t in $tags; do
			case $t in
			c)
				if ! out=$("$CC" -std=c11 -Wall -Wextra -Werror -pthread -I"$root/include" \
					-o "$exe" "$src" -L"$build" -lpurge 2>&1); then
					err "$name: C example ${file#"$name".} does not compile:"
					printf '%s\n' "$out" >&2
					continue 2
				fi
				compiled=$((compiled + 1))
				;;
			c++)
				if ! out=$("$CXX" -x c++ -Wall -Wextra -Werror -pthread -I"$root/include" \
					-o "$exe.cxx" "$src" -L"$build" -lpurge 2>&1); then
					err "$name: example ${file#"$name".} does not compile as C++:"
					printf '%s\n' "$out" >&2
				fi
				compiled=$((compiled + 1))
				;;
			run)
				if ! out=$(cd "$tmp" && LD_LIBRARY_PATH="$build" timeout 60 "$exe" 2>&1); then
					err "$name: example ${file#"$name".} failed when run:"
					printf '%s\n' "$out" >&2
				fi
				ran=$((ran + 1))
				;;
			*) err "$name: unknown example tag '$t'" ;;
			esac
		done
	done <<<"$list"
done

readme="$tmp/readme-example.c"
awk '/^## Example/ { f = 1 } f && /^```c$/ { c = 1; next } c && /^```/ { exit } c' \
	"$root/README.md" >"$readme"
if [ ! -s "$readme" ]; then
	err "README.md: no C block under \"## Example\""
elif ! out=$("$CC" -std=c11 -Wall -Wextra -Werror -I"$root/include" -c -o "$tmp/readme.o" \
	"$readme" 2>&1); then
	err "README.md: the Example does not compile:"
	printf '%s\n' "$out" >&2
else
	compiled=$((compiled + 1))
fi

if [ $fail -ne 0 ]; then
	echo "check-man-examples: FAILED" >&2
	exit 1
fi
echo "check-man-examples: ${#pages[@]} pages, $compiled compilations, $ran runs: ok"
