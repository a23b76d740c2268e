# SPDX-License-Identifier: MIT
#
# frontier-table.awk: frontier.sh's text report.  Reads workloads.tsv
# (tab-separated) and frontier.csv (-F,); prints one aligned table per
# workload, medians with the spread of the three records the dominance
# check uses, and that check under it.  -v slack=1.05 as in the summary;
# -v reps=N, the repetitions.

# the description: the command, its programs without their directories
FILENAME == ARGV[1] {
	split($0, f, "\t")
	wl[++nw] = f[1]
	desc[f[1]] = f[4]
	gsub(/[^ ]*\//, "", desc[f[1]])
	next
}
FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }

{
	w = $col["workload"]
	r = ++nr[w]
	for (i = 1; i <= NF; i++) cell[w, r, i] = $i
	if (length($col["config"]) > width) width = length($col["config"])
}

function v(w, r, name) { return cell[w, r, col[name]] }

# a record as the table shows it: printf format f, "-" when not measured
function num(x, f) {
	if (x == "NA" || x == "") return "-"
	if (f == "thr") f = (x >= 100) ? "%.0f" : "%.1f"
	return sprintf(f, x)
}

# half the range of a record as a percentage of its median
function spread(w, r, m,    md) {
	md = v(w, r, m "_med")
	if (md == "NA" || md == 0) return "-"
	return sprintf("%.0f%%", 50 * (v(w, r, m "_max") - v(w, r, m "_min")) / md)
}

function table(w,    r, fmt) {
	print ""
	print "## " w ": " desc[w]
	print "   throughput in " v(w, 1, "unit") "; medians of " reps " interleaved runs," \
		" +- = half their range (min to max) as % of the median"
	fmt = "%-" width "s %-7s %12s %5s %8s %5s %8s %5s %8s %10s %9s %7s %7s\n"
	printf fmt, "config", "kind", "throughput", "+-", "cpu_s", "+-", "avgMiB", "+-", "peakMiB",
		"minflt", "purges", "munmap", "p99_ms"
	for (r = 1; r <= nr[w]; r++)
		printf fmt, v(w, r, "config"), v(w, r, "kind"), num(v(w, r, "throughput_med"), "thr"),
			spread(w, r, "throughput"), num(v(w, r, "cpu_s_med"), "%.2f"), spread(w, r, "cpu_s"),
			num(v(w, r, "rss_avg_mib_med"), "%.1f"), spread(w, r, "rss_avg_mib"),
			num(v(w, r, "rss_peak_mib_med"), "%.1f"), num(v(w, r, "minflt_med"), "%.0f"),
			num(v(w, r, "purges_med"), "%.0f"), num(v(w, r, "munmap_med"), "%.0f"),
			num(v(w, r, "p99_ms_med"), "%.2f")
}

# "NAME thr=a rss=b cpu=c" -> "NAME: throughput ax, avg RSS bx, CPU cx"
function words(c,    p) {
	if (c !~ /thr=/) return c
	split(c, p, " ")
	gsub(/[a-z]+=/, "", p[2]); gsub(/[a-z]+=/, "", p[3]); gsub(/[a-z]+=/, "", p[4])
	return p[1] ": throughput " p[2] "x, avg RSS " p[3] "x, CPU " p[4] "x"
}

function check(w,    r, d, n) {
	n = 0
	for (r = 1; r <= nr[w]; r++) {
		if (v(w, r, "kind") != "stock" || v(w, r, "family") == "-") continue
		if (!n++) printf "dominance (a patched point with >= throughput, <= avg RSS, <= %sx CPU):\n", slack
		d = v(w, r, "dominated_by")
		if (d == "none" && v(w, r, "closest") !~ /thr=/)
			printf "  %-" width "s not dominated: %s\n", v(w, r, "config"), v(w, r, "closest")
		else if (d == "none")
			printf "  %-" width "s not dominated (closest %s)\n", v(w, r, "config"), words(v(w, r, "closest"))
		else
			printf "  %-" width "s dominated by %s\n", v(w, r, "config"), words(v(w, r, "closest"))
	}
}

END {
	for (i = 1; i <= nw; i++)
		if (nr[wl[i]]) {
			table(wl[i])
			check(wl[i])
		}
}
