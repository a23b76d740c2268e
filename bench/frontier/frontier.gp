# SPDX-License-Identifier: MIT
#
# frontier.gp: one workload's frontier, throughput against average RSS, one
# labelled point per configuration.  frontier.sh runs it as
#   gnuplot -e "dat='W.dat'; png='frontier-W.png'; unit='...'; ttl='...'" \
#           -e "x0=..; x1=..; y0=..; y1=..; logx=0|1; logy=0|1; kinds='1 2 ...'; xt='(...)'; yt='(...)'" \
#           frontier.gp
# dat is frontier-labels.awk's output, tab-separated (its first line, a
# comment, holds the second -e): x y xlo xhi ylo yhi style label_x label_y
# label leader_x leader_y.

set terminal pngcairo size 1100,760 font "sans,10" noenhanced
set output png
set datafile separator "\t"
set title ttl
eval "set xtics " . xt
eval "set ytics " . yt
set ylabel "throughput (" . unit . ", higher is better)"
set xlabel "average RSS (MiB, lower is better): /proc/PID/statm every 100 ms, averaged over the run"
set xrange [x0:x1]
set yrange [y0:y1]
if (logx) {
	set logscale x
	set xlabel "average RSS (MiB, log scale, lower is better): /proc/PID/statm every 100 ms, averaged over the run"
}
if (logy) {
	set logscale y
	set ylabel "throughput (" . unit . ", log scale, higher is better)"
}
set grid back lc rgb "#e4e4e4"
set key below horizontal
set label 1 "better: up and to the left" at graph 0.01, graph 0.97 left font ",9" tc rgb "#707070"

array name[8] = ["jemalloc stock", "jemalloc + libpurge (patched)", "jemalloc, other", \
	"mimalloc stock", "mimalloc + libpurge (patched)", "mimalloc, other", "reference", \
	"stock, dominated by no patched point"]
array colour[8] = ["#1f77b4", "#d62728", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#7f7f7f", "#000000"]
array pt[8] = [7, 5, 13, 7, 5, 13, 9, 6]
array ps[8] = [1.4, 1.4, 1.7, 1.4, 1.4, 1.7, 1.5, 3.0]

plot dat using 1:($7 < 8 ? $2 : NaN):3:4:5:6 with xyerrorbars lc rgb "#c0c0c0" pt -1 notitle, \
	dat using 1:2:($11 - $1):($12 - $2) with vectors nohead lc rgb "#909090" notitle, \
	for [s in kinds] dat using 1:($7 == s + 0 ? $2 : NaN) with points \
		pt pt[s + 0] ps ps[s + 0] lc rgb colour[s + 0] title name[s + 0], \
	dat using 8:9:10 with labels font ",9" notitle
