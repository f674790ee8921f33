#!/usr/bin/python3
"""Plots `kplace bench --sweep affinity --csv FILE` and fits a per-pod cost model.

usage: tools/plot_affinity.py SWEEP.csv OUT.png [--model OUT.md] [--stat p50_ms|mean_ms]
                               [--nodes 5000] [--existing 10000]

Left panel: per-pod cost (--stat, default the median p50_ms: the machine may be shared,
and a median shrugs off preempted pods) against existing pods with affinity terms, at
--nodes. Right panel: the same against nodes, at --existing. Engine solid, reference dashed.

The model, per (kind, side), fitted by least squares on relative error over every point
that ran (skipped reference points have no cost):
    t_ms = a + b*N + c*E + d*N*E        N = nodes, E = existing pods with terms
with coefficients kept non-negative (a negative one is dropped and the fit redone). It
prints where each path crosses 1 ms and 10 ms per pod, both as measured (log-log
interpolation along the two panels' lines) and as the model predicts, extrapolating past
the grid. Uses Debian's python3-matplotlib (tools/setup installs it); run it with
/usr/bin/python3.
"""
import argparse
import csv
import math
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

KIND_COLORS = {
    "none": "#777777",
    "required-affinity": "#1f77b4",
    "required-anti-affinity": "#d62728",
    "preferred-affinity": "#2ca02c",
    "preferred-anti-affinity": "#ff7f0e",
    "required-spread": "#9467bd",
    "preferred-spread": "#8c564b",
}
TERMS = ["a", "b*N", "c*E", "d*N*E"]


def load(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            r["nodes"] = int(r["nodes"])
            r["existing"] = int(r["existing"])
            r["pods"] = int(r["pods"])
            r["mean_ms"] = float(r["mean_ms"])
            r["p50_ms"] = float(r["p50_ms"])
            rows.append(r)
    return rows


STAT = "p50_ms"


def fit(points):
    """Non-negative relative least squares of t = a + bN + cE + dNE; returns 4 coefficients."""
    n = np.array([p["nodes"] for p in points], dtype=float)
    e = np.array([p["existing"] for p in points], dtype=float)
    t = np.array([p[STAT] for p in points], dtype=float)
    cols = [np.ones_like(n), n, e, n * e]
    active = list(range(4))
    coef = np.zeros(4)
    while active:
        a = np.stack([cols[i] / t for i in active], axis=1)
        sol, *_ = np.linalg.lstsq(a, np.ones_like(t), rcond=None)
        if (sol >= 0).all():
            coef[:] = 0
            coef[active] = sol
            break
        active = [i for i, s in zip(active, sol) if s >= 0]
    return coef


def predict(coef, nodes, existing):
    a, b, c, d = coef
    return a + b * nodes + c * existing + d * nodes * existing


def crossing_existing(coef, nodes, target):
    a, b, c, d = coef
    base, slope = a + b * nodes, c + d * nodes
    if base >= target:
        return 0.0
    return math.inf if slope <= 0 else (target - base) / slope


def crossing_nodes(coef, existing, target):
    a, b, c, d = coef
    base, slope = a + c * existing, b + d * existing
    if base >= target:
        return 0.0
    return math.inf if slope <= 0 else (target - base) / slope


def fmt_count(x):
    if x == 0:
        return "below the grid"
    if math.isinf(x):
        return "never (flat)"
    if x >= 1e7:
        return f"{x:.1e}"
    return f"{x:,.0f}"


def measured_crossing(line, key, target):
    """First crossing of `target` along points sorted by `key`, log-log interpolated."""
    if not line:
        return "n/a"
    first = line[0]
    if first[STAT] >= target:
        return f"below the grid ({first[STAT]:.3g} ms at {first[key]:,})"
    for lo, hi in zip(line, line[1:]):
        if lo[STAT] < target <= hi[STAT]:
            x0, x1 = max(lo[key], 1), max(hi[key], 1)
            y0, y1 = lo[STAT], hi[STAT]
            f = (math.log(target) - math.log(y0)) / (math.log(y1) - math.log(y0))
            return f"{math.exp(math.log(x0) + f * (math.log(x1) - math.log(x0))):,.0f}"
    last = line[-1]
    return f"> {last[key]:,} ({last[STAT]:.3g} ms there)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("png")
    ap.add_argument("--model", help="write the fitted model and crossings as a Markdown table")
    ap.add_argument("--stat", choices=["p50_ms", "mean_ms"], default="p50_ms")
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--existing", type=int, default=10000)
    args = ap.parse_args()
    global STAT
    STAT = args.stat

    rows = [r for r in load(args.csv) if r["pods"] > 0]
    groups = defaultdict(list)
    for r in rows:
        groups[(r["kind"], r["side"])].append(r)

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.2))
    for (kind, side), pts in sorted(groups.items()):
        color = KIND_COLORS.get(kind, "black")
        style = "--" if side == "reference" else "-"
        marker = "s" if side == "reference" else "o"
        label = f"{'no terms (baseline)' if kind == 'none' else kind} ({side})"
        by_e = sorted((p for p in pts if p["nodes"] == args.nodes), key=lambda p: p["existing"])
        if by_e:
            # 0 existing pods sits at x = 10 on the log axis (labelled 0).
            left.plot([max(p["existing"], 10) for p in by_e], [p[STAT] for p in by_e], style, marker=marker,
                      color=color, label=label, markersize=4)
        by_n = sorted((p for p in pts if p["existing"] == args.existing), key=lambda p: p["nodes"])
        if by_n:
            right.plot([p["nodes"] for p in by_n], [p[STAT] for p in by_n], style, marker=marker, color=color,
                       label=label, markersize=4)
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axhline(1, color="black", linewidth=0.6, linestyle=":")
        ax.axhline(10, color="black", linewidth=0.6, linestyle=":")
        ax.set_ylabel(f"per-pod cost, {'median' if STAT == 'p50_ms' else 'mean'} ms (cycle, default profile)")
        ax.grid(True, which="major", alpha=0.3)
    left.set_xlabel(f"existing pods with terms (at {args.nodes:,} nodes; 0 drawn at 10)")
    right.set_xlabel(f"nodes (at {args.existing:,} existing pods with terms)")
    left.set_title("cost vs existing pods")
    right.set_title("cost vs nodes")
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle("kplace: per-pod cost by pod term shape — engine (omp, solid) vs reference (dashed)")
    fig.tight_layout(rect=(0, 0.12, 1, 0.95))
    fig.savefig(args.png, dpi=110)
    print(f"wrote {args.png}")

    n_at, e_at = f"{args.nodes:,} nodes", f"{args.existing:,} existing"
    lines = [
        f"Fitted on {STAT}: t_ms = a + b*N + c*E + d*N*E (N nodes, E existing pods with terms).",
        "",
        "| kind | side | a (ms) | b (ms/node) | c (ms/existing pod) | d (ms/(node*pod)) | median rel. error | max rel. error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    crossings = [
        "",
        f"Where the per-pod cost ({STAT}) reaches 1 ms and 10 ms: measured = interpolated along the grid lines "
        f"(E at {n_at}; N at {e_at}); model = the fit above, extrapolated.",
        "",
        f"| kind | side | E for 1 ms ({n_at}) | E for 10 ms ({n_at}) | N for 1 ms ({e_at}) | N for 10 ms ({e_at}) |",
        "|---|---|---|---|---|---|",
    ]
    for (kind, side), pts in sorted(groups.items()):
        if len(pts) < 2:
            continue
        coef = fit(pts)
        errs = sorted(abs(predict(coef, p["nodes"], p["existing"]) - p[STAT]) / p[STAT] for p in pts)
        lines.append(
            f"| {kind} | {side} | {coef[0]:.3g} | {coef[1]:.3g} | {coef[2]:.3g} | {coef[3]:.3g} | "
            f"{errs[len(errs) // 2]:.0%} | {errs[-1]:.0%} |")
        by_e = sorted((p for p in pts if p["nodes"] == args.nodes), key=lambda p: p["existing"])
        by_n = sorted((p for p in pts if p["existing"] == args.existing), key=lambda p: p["nodes"])
        cells = []
        for line, key, model in ((by_e, "existing", lambda t: crossing_existing(coef, args.nodes, t)),
                                 (by_n, "nodes", lambda t: crossing_nodes(coef, args.existing, t))):
            for target in (1, 10):
                cells.append(f"{measured_crossing(line, key, target)}; model {fmt_count(model(target))}")
        crossings.append(f"| {kind} | {side} | " + " | ".join(cells) + " |")
    lines += crossings
    text = "\n".join(lines) + "\n"
    print(text)
    if args.model:
        with open(args.model, "w") as f:
            f.write(text)
        print(f"wrote {args.model}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
