# SPDX-License-Identifier: MIT
#
# frontier-summary.awk: frontier.sh's CSV.  Reads configs.tsv, workloads.tsv
# and runs.tsv (tab-separated, in that order); prints one row per workload x
# configuration that ran, in the order of those two files: the median, min
# and max of every record over the runs that succeeded, then the dominance
# check of the stock points.  -v slack=1.05: the CPU a dominating point may
# use, as a factor of the stock point's.
#
# runs.tsv: workload config rep rc throughput cpu_s rss_avg_mib rss_peak_mib
#           rss_samples minflt purges munmap p99_ms   ("-": not measured)

BEGIN {
	nm = split("throughput cpu_s rss_avg_mib rss_peak_mib minflt purges munmap p99_ms", mname, " ")
	split("5 6 7 8 10 11 12 13", mcol, " ")
}

FILENAME == ARGV[1] { cfg[++nc] = $1; fam[$1] = $2; kind[$1] = $3; next }
FILENAME == ARGV[2] { wl[++nw] = $1; unit[$1] = $3; next }

{
	k = $1 SUBSEP $2
	if ($4 != 0 || $5 == "-") { failed[k]++; seen[k] = 1; next }
	seen[k] = 1
	n[k]++
	for (m = 1; m <= nm; m++)
		val[k, m, n[k]] = $(mcol[m])
	smp[k, n[k]] = $9
}

# sorts v[1..c] in place (insertion sort: a handful of runs); their median
function median(v, c,    i, j, t) {
	for (i = 2; i <= c; i++)
		for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
	return (c % 2) ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
}

# median, min and max of the numbers among val[k, m, 1..n[k]]
function stats(k, m,    i, c, v) {
	c = 0
	for (i = 1; i <= n[k]; i++)
		if (val[k, m, i] ~ /^[0-9.]+$/) v[++c] = val[k, m, i] + 0
	if (c == 0) { med[k, m] = ""; return "NA,NA,NA" }
	med[k, m] = median(v, c)
	return sprintf("%.10g,%.10g,%.10g", med[k, m], v[1], v[c])
}

function samples(k,    i, v) {
	for (i = 1; i <= n[k]; i++) v[i] = smp[k, i] + 0
	return n[k] ? median(v, n[k]) : "NA"
}

function ok(k) { return med[k, 1] != "" && med[k, 2] != "" && med[k, 3] != "" }

# "NAME thr=.. rss=.. cpu=.." : P's medians as ratios of S's
function ratios(p, s) {
	return sprintf("%s thr=%.2f rss=%.2f cpu=%.2f", substr(p, index(p, SUBSEP) + 1),
		med[p, 1] / med[s, 1], med[p, 3] / med[s, 3], med[p, 2] / med[s, 2])
}

function worst(p, s,    a, b, c) {
	a = med[s, 1] / med[p, 1]
	b = med[p, 3] / med[s, 3]
	c = med[p, 2] / (slack * med[s, 2])
	return (a > b ? (a > c ? a : c) : (b > c ? b : c))
}

# dominated_by and closest for stock point s of workload w
function dominance(w, s,    i, p, best, near, d, x) {
	best = ""
	near = ""
	for (i = 1; i <= nc; i++) {
		p = w SUBSEP cfg[i]
		if (!(p in n) || kind[cfg[i]] != "patched" || fam[cfg[i]] != fam[substr(s, index(s, SUBSEP) + 1)] || !ok(p))
			continue
		if (med[p, 1] >= med[s, 1] && med[p, 3] <= med[s, 3] && med[p, 2] <= slack * med[s, 2]) {
			if (best == "" || med[p, 1] > med[best, 1]) best = p
		}
		x = worst(p, s)
		if (near == "" || x < d) { near = p; d = x }
	}
	if (best != "") return substr(best, index(best, SUBSEP) + 1) "," ratios(best, s)
	if (near != "") return "none," ratios(near, s)
	return "none,no patched point"
}

END {
	printf "workload,unit,config,family,kind,runs,failed"
	for (m = 1; m <= nm; m++) printf ",%s_med,%s_min,%s_max", mname[m], mname[m], mname[m]
	print ",rss_samples,dominated_by,closest"
	for (a = 1; a <= nw; a++) {
		for (b = 1; b <= nc; b++) {
			k = wl[a] SUBSEP cfg[b]
			if (!(k in seen)) continue
			line = wl[a] "," unit[wl[a]] "," cfg[b] "," fam[cfg[b]] "," kind[cfg[b]] "," n[k] + 0 "," failed[k] + 0
			for (m = 1; m <= nm; m++) line = line "," stats(k, m)
			row[k] = line "," samples(k)
		}
		for (b = 1; b <= nc; b++) {
			k = wl[a] SUBSEP cfg[b]
			if (!(k in row)) continue
			d = ","
			if (kind[cfg[b]] == "stock" && fam[cfg[b]] != "-")
				d = ok(k) ? dominance(wl[a], k) : "none,no medians of its own"
			print row[k] "," d
		}
	}
}
