#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The queue memory figures of purge.h, purge_queue_bytes(3) and the README
# are the ones purge_queue_bytes() gives (tests/doc_figures.c).
# Usage: check-doc-figures.sh DOC_FIGURES_PROGRAM SOURCE_ROOT
set -euo pipefail
out=$("$1") || { rc=$?; echo "check-doc-figures: $out"; exit $rc; }
read -r per fixed def <<<"$out"
root=$2
fail=0
# one line of text: comment stars, roff escapes and line breaks gone
flat() { sed -e 's|^ *\* \{0,1\}||' -e 's|\\ | |g' "$1" | tr '\n' ' ' | tr -s ' '; }
want() { # FILE TEXT
	if ! flat "$root/$1" | grep -qF "$2"; then
		echo "check-doc-figures: $1 does not say \"$2\"" >&2
		fail=1
	fi
}
want include/purge.h "about $per bytes a range plus $fixed KiB ($def KiB for the default 1024)"
want man/purge_queue_bytes.3 "about $per bytes a range plus $fixed KiB"
want man/purge_queue_bytes.3 "The default 1024 ranges need $def KiB"
want README.md "$def KiB at the default 1024 ranges"
[ $fail -eq 0 ] && echo "check-doc-figures: $per bytes a range, $fixed KiB, $def KiB for 1024: as documented"
exit $fail
