#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Lint the man pages and check that they cover the public API.
# Usage: .ci/check-man.sh   (from anywhere; needs mandoc)
# Fails on any mandoc warning, a public function without a page, a page
# missing a section (or, in section 3, its Complexity subsection), a page
# that man/meson.build does not install, a link to a missing page, a
# reference to a page of ours that does not exist, or a page that the SEE
# ALSO of libpurge(7), the overview, leaves out.  The examples are
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

if [ $fail -ne 0 ]; then
	echo "check-man: FAILED" >&2
	exit 1
fi
echo "check-man: ${#pages[@]} pages, $(echo "$funcs" | wc -l) functions: ok"
