#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Lint the man pages and check that they cover the public API.
# Usage: .ci/check-man.sh   (from anywhere; needs mandoc)
# Fails on any mandoc warning, a public function without a page, a page
# missing a section (or, in section 3, its Complexity subsection), a page
# that man/meson.build does not install, a link to a missing page, a
# reference to a page of ours that does not exist, a page that the SEE
# ALSO of libpurge(7), the overview, leaves out, or version nodes in
# libpurge(7) other than src/purge.map's.  The examples are
# compiled by .ci/check-man-examples.sh.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
man="$root/man"
fail=0
err() { echo "check-man: $*" >&2; fail=1; }

if ! command -v mandoc >/dev/null; then
	echo "check-man: mandoc not found (apt-get install mandoc)" >&2
	exit 1
fi

# Each line "NODE fn fn ..." with its functions sorted.
sort_fns() {
	while read -r node fns; do
		printf '%s\n' "$node $(tr ' ' '\n' <<<"$fns" | sort -u | tr '\n' ' ')" | sed 's/ *$//'
	done
}

shopt -s nullglob
pages=("$man"/*.[1-9])
[ ${#pages[@]} -gt 0 ] || { echo "check-man: no pages in $man" >&2; exit 1; }

# 1. mandoc: any message at level "warning" or above fails.
if ! out=$(mandoc -T lint -W warning "${pages[@]}" 2>&1) || [ -n "$out" ]; then
	err "mandoc lint:"
	printf '%s\n' "$out" >&2
fi

# Sections every page must have, by manual section.
required_sections() {
	case $1 in
	1) printf '%s\n' NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" EXAMPLE "SEE ALSO" ;;
	3) printf '%s\n' NAME SYNOPSIS DESCRIPTION "RETURN VALUE" ERRORS NOTES EXAMPLE "SEE ALSO" ;;
	7) printf '%s\n' NAME DESCRIPTION ENVIRONMENT NOTES EXAMPLE "SEE ALSO" ;;
	esac
}

for p in "${pages[@]}"; do
	name=$(basename "$p")
	[[ $(head -n1 "$p") == *'SPDX-License-Identifier: MIT'* ]] ||
		err "$name: first line is not the SPDX line"
	grep -qF "'$name'" "$man/meson.build" || err "$name: not installed by man/meson.build"
	sections=$(required_sections "${name##*.}")
	[ -n "$sections" ] || { err "$name: no section list for man${name##*.}"; continue; }
	while read -r s; do
		grep -qx "\.SH \"\?$s\"\?" "$p" || err "$name: missing section $s"
	done <<<"$sections"
	# the cost of every call is documented (NOTES, .SS Complexity)
	if [[ $name == *.3 ]] && ! grep -qx '\.SS Complexity' "$p"; then
		err "$name: no Complexity subsection"
	fi
done

# Every link man/meson.build installs points to a page it installs.
while read -r link target; do
	if [ ! -f "$man/$target" ] || ! grep -qF "'$target'" "$man/meson.build"; then
		err "link $link points to $target, which is not an installed page"
	fi
done < <(awk -F"'" '/install_symlink\(/ { l = $2 } /pointing_to:/ { print l, $2 }' \
	"$man/meson.build")

# 2. Every function declared in purge.h has a page, or is named on a page
#    whose link man/meson.build installs (install_symlink('NAME.3', ...)).
#    Declarations start in column 0 with a type; comments never do.
funcs=$(grep -oE '^[a-z].*[ *](purge_[a-z_]+)\(' "$root/include/purge.h" |
	grep -oE 'purge_[a-z_]+\($' | tr -d '(' | sort -u)
[ -n "$funcs" ] || err "no functions found in include/purge.h"
for f in $funcs; do
	[ -f "$man/$f.3" ] && continue
	if grep -qF "install_symlink('$f.3'" "$man/meson.build" &&
		grep -qw "$f" <<<"$(awk '/^\.SH NAME/ { getline; print }' "$man"/*.3)"; then
		continue
	fi
	err "$f: no man page (man/$f.3) and no installed link to a page naming it"
done

# 3. Cross references to our own pages resolve.
refs=$(grep -hoE '^\.BR (purge_[a-z_]+|libpurge|purge\\-bench) \([137]\)' "${pages[@]}" |
	sed 's/\\-/-/' | awk '{ print $2 "." substr($3, 2, 1) }' | sort -u)
while read -r ref; do
	[ -f "$man/$ref" ] || grep -qF "install_symlink('$ref'" "$man/meson.build" ||
		err "reference to missing page $ref"
done <<<"$refs"

# 4. The overview's SEE ALSO lists every other page of ours.
see_also=$(awk '/^\.SH "?SEE ALSO"?$/ { f = 1; next } /^\.SH/ { f = 0 }
	f && /^\.BR / { print $2 "." substr($3, 2, 1) }' "$man/libpurge.7" | sed 's/\\-/-/g')
for p in "${pages[@]}"; do
	name=$(basename "$p")
	[ "$name" = libpurge.7 ] || grep -qxF "$name" <<<"$see_also" ||
		err "libpurge.7: SEE ALSO does not list $name"
done

# 5. libpurge(7)'s "Versions and ABI" lists the version nodes of
#    src/purge.map, in the map's order, each under ".B NODE" after a .TP,
#    with the functions the map binds to it; the first node's entry names
#    none ("every function not listed below").  One line per node:
#    "NODE fn fn ...", sorted by function.
map_nodes=$(awk '
	/^[A-Z][A-Z0-9_.]*[[:space:]]*\{/ { if (n != "") print line; n = $1; line = n; first = first == "" ? n : first; next }
	n != "" && /^[[:space:]]*purge_[a-z0-9_]+;/ { s = $1; sub(/;/, "", s); if (n != first) line = line " " s }
	END { if (n != "") print line }' "$root/src/purge.map" | sort_fns)
page_nodes=$(awk '
	/^\.SS "?Versions and ABI"?$/ { f = 1; next }
	f && /^\.S[SH]/ { f = 0 }
	!f { next }
	/^\.TP/ { if (n != "") print line; n = ""; tp = 1; next }
	/^\.(PP|LP|P)$/ { if (n != "") print line; n = ""; tp = 0; next }
	tp && n == "" && /^\.B PURGE_/ { n = $2; line = n; next }
	n != "" { while (match($0, /purge_[a-z0-9_]+/)) { line = line " " substr($0, RSTART, RLENGTH)
			$0 = substr($0, RSTART + RLENGTH) } }
	END { if (n != "") print line }' "$man/libpurge.7" | sort_fns)
if [ -z "$map_nodes" ]; then
	err "no version nodes found in src/purge.map"
elif [ "$map_nodes" != "$page_nodes" ]; then
	err "libpurge.7: the version nodes under \"Versions and ABI\" differ from src/purge.map (< map, > page):"
	diff <(printf '%s\n' "$map_nodes") <(printf '%s\n' "$page_nodes") >&2 || true
fi

if [ $fail -ne 0 ]; then
	echo "check-man: FAILED" >&2
	exit 1
fi
echo "check-man: ${#pages[@]} pages, $(echo "$funcs" | wc -l) functions: ok"
