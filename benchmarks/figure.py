#!/usr/bin/env python3
"""benchmarks/figure.py -- draws the benchmark figure as SVG (Python 3 standard library only).

Like seed 000 Fig. 14: (a) run time of every problem, ours against each baseline, log-log,
with the diagonal (points below it: ours is faster); (b) histogram of the run-time
speedups baseline/ours (right of the dashed line: ours is faster); and (c) histogram of the
plan-cost ratios xla/ours on the paper's 1000 problems.

Usage: figure.py --execution execution.csv [--quality quality_paper.csv] --out figure.svg
"""
import argparse
import csv
import math
import sys

W, H = 1260, 440
PANEL_W, PANEL_H = 340, 300
TOP, LEFT = 60, 70
GAP = 80
COLORS = {"xla": "#1f77b4", "naive": "#ff7f0e"}


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class Svg:
    def __init__(self):
        self.parts = []

    def add(self, s):
        self.parts.append(s)

    def text(self, x, y, s, size=12, anchor="middle", rotate=None, weight="normal", fill="#000"):
        tr = f' transform="rotate({rotate} {x:.1f} {y:.1f})"' if rotate is not None else ""
        self.add(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
                 f'font-weight="{weight}" fill="{fill}"{tr}>{esc(s)}</text>')

    def line(self, x1, y1, x2, y2, color="#000", width=1, dash=None):
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}" '
                 f'stroke-width="{width}"{d}/>')

    def rect(self, x, y, w, h, fill="none", stroke="#000", opacity=1.0):
        self.add(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{max(h, 0):.1f}" fill="{fill}" '
                 f'stroke="{stroke}" fill-opacity="{opacity}"/>')

    def circle(self, x, y, r, color):
        self.add(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{color}" fill-opacity="0.65" stroke="none"/>')

    def render(self):
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
                f'font-family="Helvetica, Arial, sans-serif">\n<rect width="{W}" height="{H}" fill="white"/>\n')
        return head + "\n".join(self.parts) + "\n</svg>\n"


def log_ticks(lo, hi):
    ticks = []
    e = math.floor(math.log10(lo))
    while 10 ** e <= hi * 1.0001:
        for m in (1, 2, 5):
            v = m * 10 ** e
            if lo * 0.9999 <= v <= hi * 1.0001:
                ticks.append(v)
        e += 1
    return ticks


def fmt_tick(v):
    return f"{v:g}"


def scatter(svg, x0, rows):
    """(a) ours (y) against each baseline (x), run time in ms, log-log."""
    pts = [(float(r[s]), float(r["ours"]), s) for r in rows for s in ("xla", "naive")]
    vals = [v for p in pts for v in p[:2]]
    lo = 10 ** math.floor(math.log10(min(vals)))
    hi = 10 ** math.ceil(math.log10(max(vals)))
    def sx(v):
        return x0 + (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * PANEL_W
    def sy(v):
        return TOP + PANEL_H - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * PANEL_H
    svg.rect(x0, TOP, PANEL_W, PANEL_H)
    for t in log_ticks(lo, hi):
        svg.line(sx(t), TOP + PANEL_H, sx(t), TOP + PANEL_H + 4)
        svg.text(sx(t), TOP + PANEL_H + 16, fmt_tick(t), 10)
        svg.line(x0 - 4, sy(t), x0, sy(t))
        svg.text(x0 - 6, sy(t) + 3, fmt_tick(t), 10, "end")
    svg.line(sx(lo), sy(lo), sx(hi), sy(hi), "#888", 1, "4,3")
    for x, y, s in pts:
        svg.circle(sx(x), sy(y), 3.2, COLORS[s])
    svg.text(x0 + PANEL_W / 2, TOP + PANEL_H + 34, "baseline run time (ms)", 12)
    svg.text(x0 - 46, TOP + PANEL_H / 2, "ours run time (ms)", 12, rotate=-90)
    svg.text(x0 + PANEL_W / 2, TOP - 12, "(a) run times, MPI, 8 ranks", 13, weight="bold")
    for k, s in enumerate(("xla", "naive")):
        svg.circle(x0 + 14, TOP + 14 + 16 * k, 4, COLORS[s])
        svg.text(x0 + 24, TOP + 18 + 16 * k, s, 11, "start")
    svg.text(x0 + PANEL_W / 2, TOP + PANEL_H + 50, "below the diagonal: ours faster", 10, fill="#555")


def histogram(svg, x0, series, title, xlabel, lo=1 / 8, hi=64, bins_per_octave=2):
    """Histogram over log2-spaced bins of one or more series {name: [ratios]}."""
    nb = int(round(math.log2(hi / lo) * bins_per_octave))
    def bin_of(v):
        v = min(max(v, lo), hi * 0.9999)
        return min(nb - 1, int(math.floor(math.log2(v / lo) * bins_per_octave)))
    counts = {name: [0] * nb for name in series}
    for name, vals in series.items():
        for v in vals:
            counts[name][bin_of(v)] += 1
    top = max(1, max(max(c) for c in counts.values()))
    def sx(v):
        return x0 + math.log2(v / lo) / math.log2(hi / lo) * PANEL_W
    def sy(c):
        return TOP + PANEL_H - c / top * (PANEL_H - 10)
    svg.rect(x0, TOP, PANEL_W, PANEL_H)
    width = PANEL_W / nb
    names = list(series)
    for k, name in enumerate(names):
        for b, c in enumerate(counts[name]):
            if c == 0:
                continue
            bx = x0 + b * width + k * width / len(names)
            svg.rect(bx, sy(c), width / len(names), TOP + PANEL_H - sy(c), COLORS.get(name, "#2ca02c"), "none", 0.85)
    t = lo
    while t <= hi * 1.0001:
        svg.line(sx(t), TOP + PANEL_H, sx(t), TOP + PANEL_H + 4)
        svg.text(sx(t), TOP + PANEL_H + 16, fmt_tick(round(t, 3)), 10)
        t *= 2
    step = max(1, int(10 ** math.floor(math.log10(top))))
    for c in range(0, top + 1, step if top / step <= 10 else step * 5):
        svg.line(x0 - 4, sy(c), x0, sy(c))
        svg.text(x0 - 6, sy(c) + 3, str(c), 10, "end")
    svg.line(sx(1), TOP, sx(1), TOP + PANEL_H, "#444", 1.2, "5,4")
    svg.text(x0 + PANEL_W / 2, TOP + PANEL_H + 34, xlabel, 12)
    svg.text(x0 - 40, TOP + PANEL_H / 2, "problems", 12, rotate=-90)
    svg.text(x0 + PANEL_W / 2, TOP - 12, title, 13, weight="bold")
    for k, name in enumerate(names):
        vals = series[name]
        g = math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else 0
        svg.rect(x0 + PANEL_W - 172, TOP + 8 + 16 * k, 10, 10, COLORS.get(name, "#2ca02c"), "none", 0.85)
        svg.text(x0 + PANEL_W - 156, TOP + 17 + 16 * k, f"{name}/ours, geomean {g:.2f}", 11, "start")
    svg.text(x0 + PANEL_W / 2, TOP + PANEL_H + 50, "right of the dashed line: ours better", 10, fill="#555")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--execution", required=True)
    ap.add_argument("--quality")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    rows = {}
    with open(a.execution, newline="") as f:
        for r in csv.DictReader(f):
            row = rows.setdefault(r["index"], {})
            row[r["system"]] = float(r["time_median_s"]) * 1e3
            if r.get("chosen_by", "0") in ("2", "3"):  # ours: synthesize's default (the time search's choice)
                row["ours"] = row[r["system"]]
    rows = [r for r in rows.values() if all(k in r for k in ("ours", "xla", "naive"))]
    if not rows:
        sys.exit("figure.py: no complete rows in " + a.execution)

    svg = Svg()
    scatter(svg, LEFT, rows)
    histogram(svg, LEFT + PANEL_W + GAP, {s: [r[s] / r["ours"] for r in rows] for s in ("xla", "naive")},
              "(b) run-time speedup of ours", "baseline time / ours time")
    if a.quality:
        ratios = {"xla": [], "naive": []}
        with open(a.quality, newline="") as f:
            for r in csv.DictReader(f):
                o = int(r["ours_cost"])
                for s in ratios:
                    c = int(r[s + "_cost"])
                    if o > 0:
                        ratios[s].append(c / o)
                    elif c == 0:
                        ratios[s].append(1.0)
        n = len(ratios["xla"])
        histogram(svg, LEFT + 2 * (PANEL_W + GAP), ratios, f"(c) plan cost, paper workload ({n})",
                  "baseline cost / ours cost (bytes, Fig. 11)", lo=1 / 2, hi=256, bins_per_octave=2)
    with open(a.out, "w") as f:
        f.write(svg.render())


if __name__ == "__main__":
    main()
