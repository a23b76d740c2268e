# awk -f smaps-summary.awk smaps-grid.txt: mean KiB per threads x config
/^rep=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	k = v["threads"] " " v["config"]; n[k]++
	for (f in v) s[k, f] += v[f] }
END { printf "%-20s %7s %7s %6s %6s %6s %7s %3s\n", "threads config", "statm", "jefile", "jebss", "file", "stack", "anon", "n"
	for (k in n) printf "%-20s %7.0f %7.0f %6.0f %6.0f %6.0f %7.0f %3d\n", k, s[k, "statm_resident_kib"] / n[k],
		s[k, "jefile"] / n[k], s[k, "jebss"] / n[k], s[k, "file"] / n[k], s[k, "stack"] / n[k], s[k, "anon"] / n[k], n[k] }
