#!/bin/sh
# SPDX-License-Identifier: MIT
# PURGE_MUST_CHECK (purge.h): with a compiler that has warn_unused_result,
# dropping the result of purge_enqueue or purge_cancel fails a -Werror
# build, a (void) cast included for gcc (clang accepts the cast); code that
# uses the results builds; and defining PURGE_MUST_CHECK empty before the
# header (here with -D) turns the warning off.  Where the compiler lacks
# the attribute, the macro must expand to nothing and everything builds.
# usage: test-must-check.sh INCLUDE_DIR COMPILER [ARGS...]
set -eu
inc=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test-must-check: $*" >&2; exit 1; }
cc_() { "$@" -std=c11 -Wall -Wextra -Werror -I"$inc" -c -o "$tmp/o.o" 2>"$tmp/err"; }

cat >"$tmp/used.c" <<'EOF'
#include <purge.h>
int used(purge_queue *q, void *p)
{
	return purge_enqueue(q, p, 4096) < 0 || purge_cancel(q, p, 4096) < 0;
}
EOF
for f in purge_enqueue purge_cancel; do
	printf '#include <purge.h>\nvoid drop(purge_queue *q, void *p) { %s(q, p, 4096); }\n' \
		"$f" >"$tmp/$f.c"
done
printf '#include <purge.h>\nvoid drop(purge_queue *q, void *p) { (void)purge_cancel(q, p, 4096); }\n' \
	>"$tmp/cast.c"
printf '#include <purge.h>\n#if !defined(__GNUC__) || !__has_attribute(warn_unused_result)\n#error no attribute\n#endif\n' \
	>"$tmp/has.c"

cc_ "$@" "$tmp/used.c" || fail "code that checks the results does not build: $(cat "$tmp/err")"
if ! cc_ "$@" "$tmp/has.c"; then
	echo "test-must-check: no warn_unused_result here: only the empty macro is checked"
	cc_ "$@" "$tmp/purge_cancel.c" || fail "without the attribute a dropped result fails"
	exit 0
fi
for f in purge_enqueue purge_cancel; do
	if cc_ "$@" "$tmp/$f.c"; then
		fail "a dropped $f() result builds with -Werror: PURGE_MUST_CHECK is missing"
	fi
	grep -q 'unused-result\|unused result\|warn_unused_result' "$tmp/err" ||
		fail "$f: not the unused-result warning: $(cat "$tmp/err")"
	cc_ "$@" -DPURGE_MUST_CHECK= "$tmp/$f.c" ||
		fail "$f: PURGE_MUST_CHECK defined empty does not silence it: $(cat "$tmp/err")"
done
if "$@" --version 2>/dev/null | grep -q clang; then
	echo "test-must-check: clang: a (void) cast is allowed to drop the result"
elif cc_ "$@" "$tmp/cast.c"; then
	fail "gcc built a (void)-cast dropped purge_cancel() result with -Werror"
fi
echo "test-must-check: ok: dropped results fail, used ones build, -DPURGE_MUST_CHECK= silences"
