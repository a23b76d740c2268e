# awk -v secs=5 -f per-chunk.awk runs.tsv: ebizzy-lite rows per config,
# medians over the reps of: lookups per CPU-second (throughput / cpu_s x
# secs: the run's lookups over its task clock, which the load does not
# inflate as it does wall time), purge calls per chunk (madvise +
# process_madvise over chunks = lookups / 2000), average RSS (MiB).
function med(a, n,   i, j, t) {
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
$1 ~ /^ebizzy-lite/ { k = $1 " " $2; n[k]++; if (!(k in seen)) { seen[k] = 1; order[++m] = k }
	chunks = $5 * secs / 2000
	lpc[k, n[k]] = $5 * secs / $6; cpc[k, n[k]] = $11 / chunks; rss[k, n[k]] = $7 }
END { printf "%-30s %14s %16s %8s\n", "workload config", "lookups/CPU-s", "calls per chunk", "avgMiB"
	for (i = 1; i <= m; i++) { k = order[i]
		for (r = 1; r <= n[k]; r++) { a[r] = lpc[k, r]; b[r] = cpc[k, r]; c[r] = rss[k, r] }
		x = med(a, n[k]); y = med(b, n[k]); z = med(c, n[k])
		printf "%-30s %14.0f %16.3f %8.1f\n", k, x, y, z } }
