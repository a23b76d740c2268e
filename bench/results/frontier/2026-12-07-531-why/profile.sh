#!/bin/sh
# SPDX-License-Identifier: MIT
# profile.sh OUTDIR NAME LIB CONF -- PROGRAM ARGS...
# perf record -g of PROGRAM under LD_PRELOAD=LIB MALLOC_CONF=CONF, then
# OUTDIR/NAME.txt: the program's own output, uptime before and after,
# perf report --no-children --sort dso, the share of samples under the
# fault and purge paths (--children --sort sym), and --no-children
# --sort dso,sym (top 40).
# profile.sh -r OUTDIR NAME: the reports again from OUTDIR/NAME.data (the
# run's lines of NAME.txt are kept).
report() { # DATA
	echo "## perf report --no-children --sort dso (percent of samples)"
	perf report -q -i "$1" --no-children --sort dso --stdio -g none 2>/dev/null | grep -v '^$' | head -12
	echo "## perf report --children --sort sym: samples under the fault and purge paths"
	perf report -q -i "$1" --children --sort sym --stdio -g none 2>/dev/null |
		grep -E ' (asm_exc_page_fault|exc_page_fault|do_user_addr_fault|handle_mm_fault|clear_page_erms|__x64_sys_madvise|__x64_sys_process_madvise|do_madvise|unmap_page_range|fill|worker_main)$'
	echo "## perf report --no-children --sort dso,sym (top 40)"
	perf report -q -i "$1" --no-children --sort dso,sym --stdio -g none 2>/dev/null | grep -v '^$' | head -40
}
if [ "$1" = -r ]; then
	out=$2 name=$3
	run=$(sed '/^## /,$d' "$out/$name.txt")
	{ echo "$run"; report "$out/$name.data"; } >"$out/$name.txt.new" && mv "$out/$name.txt.new" "$out/$name.txt"
	exit
fi
out=$1 name=$2 lib=$3 conf=$4; shift 5
mkdir -p "$out"
{
	echo "# $(date -u +%FT%TZ) LD_PRELOAD=$lib MALLOC_CONF=$conf $*"
	echo "# uptime before: $(uptime)"
	perf record -q -g -o "$out/$name.data" -- env LD_PRELOAD="$lib" MALLOC_CONF="$conf" "$@" 2>&1
	echo "# uptime after: $(uptime)"
	report "$out/$name.data"
} >"$out/$name.txt"
