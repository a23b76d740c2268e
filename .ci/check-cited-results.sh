#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every results path a document cites must be in the repository.
#
# A cited result is a path with a dated results folder in it, e.g.
# bench/results/stall/2026-12-04/stall.txt (results/<topic>/<date>/, the
# one home since 2.3) or the older results-<date>/: figures come from such
# folders, and a figure whose data is not committed is a claim, not a
# measurement.  Undated paths such as results/sweep.csv name where a tool
# writes, not what a document cites, and are left alone.
#
# A path is looked up relative to the repository root and to the folder of
# the document that cites it, and must be tracked by git (an ignored file
# on one machine proves nothing).
#
# usage: .ci/check-cited-results.sh [FILE...]
#   default: README.md, NEWS.md, docs/*.md, man pages, and every README.md
#   below integrations/ and bench/
# Exit status: 0 when every cited path exists, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -eq 0 ]; then
	mapfile -t docs < <(git ls-files README.md NEWS.md 'docs/*.md' 'man/*.[1-9]' \
		'integrations/**README.md' 'integrations/*/README.md' 'bench/**README.md' 'bench/*/README.md')
else
	docs=("$@")
fi

tracked() { # is $1 a tracked file, or a folder holding tracked files?
	[ -n "$(git ls-files -- "$1" 2>/dev/null | head -n 1)" ] # a path outside the tree: not tracked
}

bad=0
checked=0
for doc in "${docs[@]}"; do
	dir=$(dirname "$doc")
	while IFS=: read -r line path; do
		path=${path%%[.,;:)]}
		path=${path%/}
		checked=$((checked + 1))
		if ! tracked "$path" && ! tracked "$dir/$path"; then
			echo "$doc:$line: cites $path, which is not in the repository" >&2
			bad=$((bad + 1))
		fi
	done < <(grep -noE '[A-Za-z0-9_./-]*results(-|/|/[A-Za-z0-9_-]+/)[0-9]{4}-[0-9]{2}-[0-9]{2}[A-Za-z0-9_./-]*' "$doc" || true)
done
if [ "$bad" -gt 0 ]; then
	echo "check-cited-results: $bad of $checked cited results paths are missing" >&2
	exit 1
fi
echo "check-cited-results: $checked cited results paths in ${#docs[@]} documents, all in the repository"
