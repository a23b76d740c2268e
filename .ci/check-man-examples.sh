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
#      and print on stdout exactly what the page says it prints (below)
# text not a program (shell commands, output): left alone
# text output
#      the stdout of the run example before it, line for line, as the
#      page shows it
# Between that line and the .EX, one comment line per line the program
# prints on stdout, in order:
#   .\" prints: purged 16 pages, 16 still pending      (the line, exactly)
#   .\" prints-match: thread [12]: [0-9]+ zero claims  (an ERE, whole line)
# prints-match is for what varies by machine or run (the backend, counts,
# times, the order threads print in).  A run example with neither these
# lines nor a "text output" block must print nothing on stdout; stderr is
# not compared.
# Every .EX block of an EXAMPLE section needs such a line, and every page
# of sections 3 and 7 needs at least one C example.  Roff escapes in the
# block (\e \- \& \(aq \(dq ...) are turned back into C first.
# The allocator Example (every C block under "## Example" in README.md,
# then in docs/allocator.md, where it moved from the README, one after the
# other in one file: the event loop's uses the first's queue) is compiled
# as C too, with -c (the allocator's book-keeping it calls is only declared
# there) and _POSIX_C_SOURCE (the loop reads CLOCK_MONOTONIC).
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
	/^\.\\" example:/ { tags = $0; sub(/^\.\\" example:[ \t]*/, "", tags); nexp = 0; next }
	/^\.\\" prints(-match)?:/ {
		if (tags == "") fail("prints line without an example: line before it")
		kind = $0 ~ /^\.\\" prints-match:/ ? "~" : "="
		line = $0; sub(/^\.\\" prints(-match)?: ?/, "", line)
		expect[++nexp] = kind " " line; next
	}
	/^\.EX/ {
		if (tags == "" && sec == "EXAMPLE") fail("EXAMPLE block without an example: comment")
		inblock = 1; text = tags != "" && tags !~ /^text/
		if (!text && nexp) fail("prints lines for a block that is not a program")
		out = tags ~ /^text( .*)? output( |$)/
		if (out && (lastef == "" || lastexp)) fail("a text output block without a run example before it that has no prints lines")
		if (text) { n++; file = dir "/" page "." n ".c"; printf "" > file
			ef = dir "/" page "." n ".expect"; printf "" > ef
			for (i = 1; i <= nexp; i++) print expect[i] > ef
			close(ef)
			if (nexp && tags !~ /(^| )run( |$)/) fail("prints lines for an example that is not run")
			lastef = tags ~ /(^| )run( |$)/ ? ef : ""; lastexp = nexp
			print page "." n ".c " tags }
		tags = ""; nexp = 0; next
	}
	/^\.EE/ { if (text) close(file); if (out) { close(lastef); lastef = "" }
		inblock = 0; text = 0; out = 0; next }
	inblock && out { print "= " unescape($0) >> lastef; next }
	inblock && text {
		if ($0 ~ /^[.\047]/) fail("roff request inside a program")
		print unescape($0) > file
	}
	END { exit bad }' "$2"
}

# compare_output OUT EXPECT: OUT's lines against EXPECT's "= line" and
# "~ ERE" lines, one for one; says on stdout what differs.
compare_output() {
	awk -v expf="$2" '
	BEGIN { while ((getline l < expf) > 0) { k[++n] = substr(l, 1, 1); v[n] = substr(l, 3) } }
	{ i++
	  if (i > n) { print n ? "line " i " is not on the page" : "it prints, and the page says it prints nothing"
		bad = 1; exit }
	  if (k[i] == "=" ? $0 != v[i] : $0 !~ ("^(" v[i] ")$")) {
		print "line " i " differs"; bad = 1; exit } }
	END { if (!bad && i < n) { print "it printed " i + 0 " of the page'"'"'s " n " lines"; bad = 1 }
	      exit bad }' "$1"
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
				if ! (cd "$tmp" && LD_LIBRARY_PATH="$build" timeout 60 "$exe" \
					>"$exe.out" 2>"$exe.err"); then
					err "$name: example ${file#"$name".} failed when run:"
					cat "$exe.out" "$exe.err" >&2
				elif ! why=$(compare_output "$exe.out" "${src%.c}.expect"); then
					err "$name: example ${file#"$name".} does not print what the page says: $why"
					sed 's/^/  printed: /' "$exe.out" >&2
					sed 's/^= /  page:    /; s/^~ /  page ERE: /' "${src%.c}.expect" >&2
				fi
				ran=$((ran + 1))
				;;
			*) err "$name: unknown example tag '$t'" ;;
			esac
		done
	done <<<"$list"
done

readme="$tmp/readme-example.c"
for doc in README.md docs/allocator.md; do
	[ -e "$root/$doc" ] || continue
	awk '/^## / { f = /^## Example$/ } f && /^```c$/ { c = 1; next } c && /^```/ { c = 0 } c' \
		"$root/$doc"
done >"$readme"
if [ ! -s "$readme" ]; then
	err "README.md, docs/allocator.md: no C block under \"## Example\""
elif ! out=$("$CC" -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -I"$root/include" \
	-c -o "$tmp/readme.o" "$readme" 2>&1); then
	err "README.md, docs/allocator.md: the Example does not compile:"
	printf '%s\n' "$out" >&2
else
	compiled=$((compiled + 1))
fi

if [ $fail -ne 0 ]; then
	echo "check-man-examples: FAILED" >&2
	exit 1
fi
echo "check-man-examples: ${#pages[@]} pages, $compiled compilations, $ran runs: ok"
