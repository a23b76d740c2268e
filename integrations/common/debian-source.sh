#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# debian-source.sh PACKAGE DIR: download Debian's source package PACKAGE
# (the release this machine runs) into DIR, without touching the system's
# apt configuration: a private deb-src list and a private state directory
# under DIR.  Prints the path of the .orig tarball it got.  Exit 77 when the
# archive cannot be reached or has no such source (callers skip with that
# reason), 1 on other errors.  Needs apt-get and network access to the
# archive named in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 PACKAGE DIR" >&2; exit 1; }
pkg=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)
command -v apt-get >/dev/null || { echo "debian-source: no apt-get" >&2; exit 77; }

mkdir -p "$dir/apt/parts" "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial"
# deb822 files: the same entries, as deb-src; one-line lists: deb -> deb-src
: >"$dir/apt/parts/src.sources"
for f in /etc/apt/sources.list.d/*.sources; do
	[ -r "$f" ] && sed 's/^Types: *deb$/Types: deb-src/' "$f" >>"$dir/apt/parts/src.sources"
done
: >"$dir/apt/src.list"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
	[ -r "$f" ] && sed -n 's/^deb \(.*\)/deb-src \1/p' "$f" >>"$dir/apt/src.list"
done
opts=(-o "Dir::Etc::SourceParts=$dir/apt/parts" -o "Dir::Etc::SourceList=$dir/apt/src.list"
	-o "Dir::State::Lists=$dir/apt/lists" -o "Dir::Cache=$dir/apt/cache"
	-o "Debug::NoLocking=1" -qq)
if ! apt-get "${opts[@]}" update >"$dir/apt/update.log" 2>&1; then
	echo "debian-source: apt-get update failed (no archive reachable?): $(tail -1 "$dir/apt/update.log")" >&2
	exit 77
fi
if ! (cd "$dir" && apt-get "${opts[@]}" source --download-only "$pkg") >"$dir/apt/source.log" 2>&1; then
	echo "debian-source: no source for $pkg: $(tail -1 "$dir/apt/source.log")" >&2
	exit 77
fi
orig=$(ls "$dir"/"${pkg}"_*.orig.tar.* 2>/dev/null | head -1)
[ -n "$orig" ] || { echo "debian-source: $pkg: no .orig tarball in $dir" >&2; exit 1; }
echo "$orig"
