# SPDX-License-Identifier: MIT
#
# frontier-labels.awk: one workload's points for frontier.gp.  Reads
# frontier.csv (-F,) and -v w=WORKLOAD; prints a first line
# "# gnuplot: x0=...; ..." (the axis ranges, whether each axis is
# logarithmic, the styles present, the tics of both) and one tab-separated
# row per point:
#   x y xlo xhi ylo yhi style label_x label_y label leader_x leader_y
# x is the average RSS, y the throughput (medians; lo and hi: min and max);
# the leader line runs from (x, y) to (leader_x, leader_y), the point itself
# where the label is close enough to need none.
# Labels are placed greedily, each where it covers the fewest points and
# labels already placed (in pixels of the plot area frontier.gp draws).
# Styles: 1-3 jemalloc stock, patched, other; 4-6 mimalloc; 7 a reference;
# 8 a ring around a stock point no patched point dominates.

BEGIN {
	pw = 960; ph = 520 # the plot area in pixels (frontier.gp: 1100x760)
	cw = 6.2; ch = 13 # a label character at font size 9
}

FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
$col["workload"] != w || $col["throughput_med"] == "NA" || $col["rss_avg_mib_med"] == "NA" { next }

{
	n++
	x[n] = $col["rss_avg_mib_med"]; y[n] = $col["throughput_med"]
	xl[n] = $col["rss_avg_mib_min"]; xh[n] = $col["rss_avg_mib_max"]
	yl[n] = $col["throughput_min"]; yh[n] = $col["throughput_max"]
	name[n] = $col["config"]
	f = $col["family"]; k = $col["kind"]
	st[n] = (f == "-") ? 7 : (f == "mi" ? 3 : 0) + (k == "stock" ? 1 : k == "patched" ? 2 : 3)
	ring[n] = (k == "stock" && f != "-" && $col["dominated_by"] == "none")
}

function lo(a, b) { return a < b ? a : b }
function hi(a, b) { return a > b ? a : b }

function ranges(    i, xa, xb, ya, yb, p) {
	xa = xl[1]; xb = xh[1]; ya = yl[1]; yb = yh[1]
	for (i = 2; i <= n; i++) {
		xa = lo(xa, xl[i]); xb = hi(xb, xh[i]); ya = lo(ya, yl[i]); yb = hi(yb, yh[i])
	}
	# an axis is logarithmic where its values span more than 8x
	logx = (xa > 0 && xb / xa > 8)
	logy = (ya > 0 && yb / ya > 8)
	axis(xa, xb, logx, 0.12)
	x0 = a0; x1 = a1
	axis(ya, yb, logy, 0.1)
	y0 = a0; y1 = a1
}

# a0 and a1: the range from a to b with a margin of part of it each side
function axis(a, b, lg, part,    p) {
	if (lg) {
		p = (log(b) - log(a)) * part + 0.05
		a0 = exp(log(a) - p); a1 = exp(log(b) + p)
	} else {
		p = (b - a) * part + (b > 0 ? b : 1) * 0.02
		a0 = hi(a - p, 0); a1 = b + p
	}
}

# data to pixels of the plot area, and back
function pos(v, a, b, lg, size) { return lg ? (log(v) - log(a)) / (log(b) - log(a)) * size : (v - a) / (b - a) * size }
function val(p, a, b, lg, size) { return lg ? exp(log(a) + p / size * (log(b) - log(a))) : a + p / size * (b - a) }
function px(v) { return pos(v, x0, x1, logx, pw) }
function py(v) { return pos(v, y0, y1, logy, ph) }
function dx(p) { return val(p, x0, x1, logx, pw) }
function dy(p) { return val(p, y0, y1, logy, ph) }

# tics for "set xtics" / "set ytics", from a to b: on a linear axis the
# step of 1, 2 or 5 x 10^k that makes 4 to 8 of them, each label with the SI
# prefix of the axis' top (0.6M 0.8M 1.0M) and the decimals the step needs;
# on a log axis 1, 2 and 5 x 10^k, each with its own prefix (20k 50k 100k).
# si = 0: plain numbers (MiB).
function tics(a, b, lg, si,    span, st, m, e, d, t, k, l, sep) {
	l = "("
	if (lg) {
		for (k = int(log(a) / log(10)) - 1; 10 ^ k <= b; k++)
			for (m = 1; m <= 5; m += (m == 1) ? 1 : 3) {
				t = m * 10 ^ k
				if (t < a || t > b) continue
				l = l sep "\"" label(t, si, -1, 0) "\" " sprintf("%.10g", t)
				sep = ","
			}
		return l ")"
	}
	span = (b - a) / 8
	st = 10 ^ int(log(span) / log(10) + (span < 1 ? -1 : 0))
	st *= (span > 5 * st) ? 10 : (span > 2 * st) ? 5 : (span > st) ? 2 : 1
	e = 0
	if (si) for (m = b; m >= 1000 && e < 4; m /= 1000) e++
	d = 0
	for (m = st / 1000 ^ e; m < 1 - 1e-9 && d < 6; m *= 10) d++
	for (t = int(a / st + 1 - 1e-9) * st; t <= b; t += st) {
		l = l sep "\"" label(t, si, e, d) "\" " sprintf("%.10g", t)
		sep = ","
	}
	return l ")"
}

# t as a tic label: with the SI prefix 1000^e (e < 0: its own), d decimals
function label(t, si, e, d) {
	if (!si) return sprintf("%." d "f", t)
	if (e < 0)
		for (e = 0; t / 1000 ^ e >= 1000 && e < 4; ) e++
	return sprintf("%." d "f%s", t / 1000 ^ e, e ? substr("kMGT", e, 1) : "")
}

function box(a, b, c, d) { nb++; bx0[nb] = a; by0[nb] = b; bx1[nb] = c; by1[nb] = d }

# pixels of boxes[1..nb] (and of the outside of the plot) a box would cover
function cover(a, b, c, d,    i, s, ox, oy) {
	s = 0
	for (i = 1; i <= nb; i++) {
		ox = lo(c, bx1[i]) - hi(a, bx0[i]); oy = lo(d, by1[i]) - hi(b, by0[i])
		if (ox > 0 && oy > 0) s += ox * oy
	}
	s += 4 * ((c - a) * (d - b) - hi(lo(c, pw) - hi(a, 0), 0) * hi(lo(d, ph) - hi(b, 0), 0))
	return s
}

# the centre of point i's label: the least covered of 16 places around it;
# one of the outer ring gets a leader line from the point to its edge
function place(i,    w2, h2, r, j, k, cx, cy, c, best, bcx, bcy, br, off) {
	w2 = (length(name[i]) * cw + 4) / 2; h2 = ch / 2
	off = ring[i] ? 13 : 8 # clear of the point, or of its ring
	split("1 0 -1 0 0 1 0 -1 1 1 1 -1 -1 1 -1 -1", dir, " ")
	best = -1
	for (r = 1; r <= 2 && best != 0; r++)
		for (j = 1; j <= 16; j += 2) {
			cx = px(x[i]) + dir[j] * (off + (r - 1) * 14 + w2) * (dir[j + 1] ? 0.6 : 1)
			cy = py(y[i]) + dir[j + 1] * (off + (r - 1) * 14 + h2 - (dir[j] ? h2 / 2 : 0))
			c = cover(cx - w2, cy - h2, cx + w2, cy + h2)
			if (best < 0 || c < best) { best = c; bcx = cx; bcy = cy; br = r }
			if (c == 0) break
		}
	box(bcx - w2, bcy - h2, bcx + w2, bcy + h2)
	lx[i] = dx(bcx); ly[i] = dy(bcy)
	# the leader ends on the label's box, where the line from the point meets it
	ex[i] = x[i]; ey[i] = y[i]
	if (br == 2) {
		ex[i] = dx(hi(bcx - w2, lo(px(x[i]), bcx + w2)))
		ey[i] = dy(hi(bcy - h2, lo(py(y[i]), bcy + h2)))
	}
}

END {
	if (!n) exit
	ranges()
	for (i = 1; i <= n; i++) {
		k = ring[i] ? 12 : 7
		box(px(x[i]) - k, py(y[i]) - k, px(x[i]) + k, py(y[i]) + k)
		seen[st[i]] = 1
		if (ring[i]) seen[8] = 1
	}
	for (i = 1; i <= n; i++) place(i)
	kinds = ""
	for (s = 1; s <= 8; s++) if (s in seen) kinds = kinds " " s
	printf "# gnuplot: x0=%.10g; x1=%.10g; y0=%.10g; y1=%.10g; logx=%d; logy=%d; kinds='%s';" \
		" xt='%s'; yt='%s'\n", x0, x1, y0, y1, logx, logy, substr(kinds, 2),
		tics(x0, x1, logx, 0), tics(y0, y1, logy, 1)
	for (i = 1; i <= n; i++)
		printf "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%.10g\t%.10g\t%s\t%.10g\t%.10g\n", x[i], y[i],
			xl[i], xh[i], yl[i], yh[i], st[i], lx[i], ly[i], name[i], ex[i], ey[i]
	for (i = 1; i <= n; i++)
		if (ring[i])
			printf "%s\t%s\t%s\t%s\t%s\t%s\t8\t%s\t%s\t\t%s\t%s\n", x[i], y[i], x[i], x[i],
				y[i], y[i], x[i], y[i], x[i], y[i]
}
