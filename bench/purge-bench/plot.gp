# SPDX-License-Identifier: MIT
# purge-bench --plot: median ns per purged page against vlen, with p10-p90
# bars, from purge-bench's CSV.  Also by hand:
#   gnuplot -c bench/purge-bench/plot.gp results/sweep.csv results/sweep.svg ['title']
if (ARGC < 2) { print "usage: gnuplot -c plot.gp IN.csv OUT.svg|OUT.png [TITLE]"; exit status 2 }
if (ARG2[strlen(ARG2) - 3:] eq ".png") {
	set terminal pngcairo size 1000,620
} else {
	set terminal svg size 1000,620 dynamic
}
set output ARG2
set title (ARGC >= 3 ? ARG3 : 'purge-bench')
set termoption noenhanced
set datafile separator ','
set datafile columnheaders
set datafile missing NaN
set logscale x 2
set xtics 2
set logscale y 10
set offsets graph 0.03, graph 0.03
set grid
set key outside right
set xlabel 'vlen (iovecs per process_madvise call; libpurge batch)'
set ylabel 'ns per purged page: median, p10-p90 bars'

is(r) = strcol('row') eq r
# p10 and p90 scaled like the median: ns_per_page = median_ns / pages
y(r) = is(r) ? column('ns_per_page') : NaN
lo(r) = is(r) ? column('p10_ns') * column('ns_per_page') / column('median_ns') : NaN
hi(r) = is(r) ? column('p90_ns') * column('ns_per_page') / column('median_ns') : NaN
# madvise-loop and floor have no vlen: flat lines across the plot
stats ARG1 using (y('madvise-loop')) name 'LOOP' nooutput
stats ARG1 using (y('floor')) name 'FLOOR' nooutput

plot for [r in 'raw-pmadv purge-nocoal purge-default'] \
	ARG1 using 'vlen':(y(r)):(lo(r)):(hi(r)) with yerrorlines title r, \
	LOOP_max with lines dt 2 lw 2 lc rgb 'red' title 'madvise-loop', \
	FLOOR_max with lines dt 2 lw 2 lc rgb 'black' title 'floor'
