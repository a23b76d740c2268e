#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# series-tree.sh: the git tree that the 5.3.1 series is written in, and back.
#
#   series-tree.sh [-s SOURCE] TREE   untar SOURCE (default:
#       ../shared/sources/jemalloc-5.3.1.tar.xz) into TREE (which must not
#       exist), commit it whole on a branch `stock`, then `git am`
#       patches/5.3.1/*.patch onto a branch `libpurge`.  Edit there (commit
#       --fixup, rebase -i --autosquash), then:
#   series-tree.sh --export TREE      write the series back as one
#       `git format-patch --zero-commit --no-signature stock` run: the old
#       patches/5.3.1/*.patch are removed and `series` rewritten.
#
# A tree made and exported without edits gives the committed files back
# byte for byte (the patches carry their author and date; the committer,
# which format-patch does not print, is whoever runs this).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
pdir=$here/patches/5.3.1
ident=(-c user.name=libpurge -c user.email=libpurge@localhost -c commit.gpgsign=false)
usage() { sed -n '/^#   series-tree/,/^# which format-patch/p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

export_series() {
	local tree=$1
	git -C "$tree" rev-parse --verify -q stock >/dev/null ||
		{ echo "series-tree: $tree has no branch stock" >&2; exit 1; }
	tmp=$(mktemp -d) # global: the trap runs after the function returned
	trap 'rm -rf "$tmp"' EXIT
	git -C "$tree" format-patch -q --zero-commit --no-signature -o "$tmp" stock
	ls "$tmp"/*.patch >/dev/null 2>&1 || { echo "series-tree: no commits past stock" >&2; exit 1; }
	rm -f "$pdir"/*.patch
	cp "$tmp"/*.patch "$pdir"/
	(cd "$pdir" && ls -- *.patch) >"$pdir/series"
	echo "series-tree: $(wc -l <"$pdir/series") patches into $pdir"
}

src="" tree=""
while [ $# -gt 0 ]; do
	case $1 in
	-s | --source) src=$2; shift 2 ;;
	--export) [ $# -eq 2 ] || usage 2; export_series "$2"; exit 0 ;;
	-h | --help) usage ;;
	-*) usage 2 ;;
	*) [ -z "$tree" ] || usage 2; tree=$1; shift ;;
	esac
done
[ -n "$tree" ] || usage 2
src=${src:-$(cd "$repo/.." && pwd)/shared/sources/jemalloc-5.3.1.tar.xz}
[ -f "$src" ] || { echo "series-tree: no source $src (give -s)" >&2; exit 77; }
[ ! -e "$tree" ] || { echo "series-tree: $tree exists" >&2; exit 1; }
mkdir -p "$tree"
tar xf "$src" -C "$tree" --strip-components=1
cd "$tree"
git init -q -b stock .
# -f: the archive holds a file its own .gitignore names (test/stress/cpp/)
git add -f -A
git "${ident[@]}" commit -q -m "jemalloc $(basename "$src" | sed 's/^jemalloc-//; s/\.tar.*//')"
git checkout -q -b libpurge
git "${ident[@]}" am -q "$pdir"/*.patch
echo "series-tree: $tree: branch stock, branch libpurge ($(git rev-list --count stock..libpurge) patches)"
