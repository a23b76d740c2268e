#!/bin/sh
# SPDX-License-Identifier: MIT
# Medians over the runs.tsv of the folders named (default r3 r3b r3c), per
# configuration and phase, and the patched rows against stock 5.3.1.
#   sh summarize.sh [DIR...]   (run in this folder)
cd "$(dirname "$0")" || exit 1
[ $# -gt 0 ] || set -- r3 r3b r3c
for d in "$@"; do cat "$d/runs.tsv"; done | awk -F'\t' '
function med(k, c,   n, i, j, t, a) {
	n = 0
	for (i = 1; i <= cnt[k]; i++) a[++n] = v[k, i, c]
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ k = $1; if (!(k in cnt)) order[++nk] = k; cnt[k]++; for (c = 3; c <= NF; c++) v[k, cnt[k], c] = $c }
END {
	split("4 9", first, " ")
	for (p = 1; p <= 2; p++) {
		c = first[p]
		printf "\n## phase %d (medians of %d runs each)\n", p, cnt["defaults"]
		printf "%-10s %9s %7s %9s %8s %8s\n", "config", "SET/s", "cpu_ms", "rss_MiB", "purges", "faults"
		for (i = 1; i <= nk; i++) { k = order[i]
			printf "%-10s %9.0f %7.0f %9.1f %8.0f %8.0f\n", k, med(k, c), med(k, c + 1), med(k, c + 2), med(k, c + 3), med(k, c + 4) }
		printf "patched-d0 / defaults SET/s %.2f (goal >= 0.95); / immediate RSS %.2f (goal <= 1.1); batch531 / patched-d0 purges %.0fx (goal >= 20)\n",
			med("patched-d0", c) / med("defaults", c), med("patched-d0", c + 2) / med("immediate", c + 2),
			med("batch531", c + 3) / med("patched-d0", c + 3)
		printf "patched-d0 vs immediate: SET/s %.2f, CPU %.2f, faults %.2f; vs batch531: SET/s %.2f, CPU %.2f, RSS %.2f\n",
			med("patched-d0", c) / med("immediate", c), med("patched-d0", c + 1) / med("immediate", c + 1),
			med("patched-d0", c + 4) / med("immediate", c + 4), med("patched-d0", c) / med("batch531", c),
			med("patched-d0", c + 1) / med("batch531", c + 1), med("patched-d0", c + 2) / med("batch531", c + 2)
		printf "patched vs defaults: SET/s %.2f, CPU %.2f, RSS %.2f, purges %.0f vs %.0f\n",
			med("patched", c) / med("defaults", c), med("patched", c + 1) / med("defaults", c + 1),
			med("patched", c + 2) / med("defaults", c + 2), med("patched", c + 3), med("defaults", c + 3)
	}
}'
