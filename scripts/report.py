#!/usr/bin/env python3
"""report.py - rk's benchmark pictures, drawn with matplotlib.

    report.py RESULTS_DIR OUT_DIR      every picture whose results exist
    report.py --timeline TRACE.json OUT.png [--title TEXT]

RESULTS_DIR holds the benchmarks' --json output, as scripts/report.sh
(make report) writes it:

    demo-<backend>.json    rk demo --json            -> demo.png
    regret-software.json   bench_regret --curves --software --json
    regret.json            bench_regret --curves --json
                                                     -> cost-crossover.png,
                                                        cost-regret.png
    ops.json               bench_ops --json          -> ops-stream.png
    opencl.json, webgpu.json, cuda.json, launch.json -> backend-overhead.png
    actors.json            bench_actors --json       -> actors.png
    trace.json             a Chrome trace (RK_TRACE) -> trace-timeline.png

A picture whose input is missing is skipped and named on stderr. Exit 0
when every picture that could be drawn was, 1 on an error, 2 on usage.

--timeline draws any trace rk wrote (RK_TRACE=FILE): one lane per thread,
a box per slice (nested slices below their parent), instant events as
ticks, actor messages' flows as arrows. It is rk's own rendering, for
documents; the trace itself opens in https://ui.perfetto.dev or
chrome://tracing.
"""
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import LogNorm  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402
from matplotlib.ticker import (FuncFormatter, LogLocator,  # noqa: E402
                               NullFormatter)

# One color per kind of candidate, the same in every picture.
COLORS = {
    "scalar": "#7f7f7f",
    "simd": "#1f77b4",
    "opencl": "#ff7f0e",
    "webgpu": "#2ca02c",
    "cuda": "#d62728",
    "metal": "#9467bd",
}
MODE_COLORS = {"traditional": "#ff7f0e", "persistent": "#1f77b4"}
DPI = 110

plt.rcParams.update({
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
})


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def color_of(target):
    """'simd/avx512' -> simd's color, 'opencl:0' -> opencl's."""
    key = target.split("/")[0].split(":")[0]
    return COLORS.get(key, "#8c564b")


def machine_line(doc):
    """'AMD EPYC, 2 CPUs, 2026-11-25' and, when known, how busy the other
    processes kept the machine."""
    parts = []
    for key in ("cpu_model", "device"):
        v = (doc or {}).get(key)
        if v and v not in parts:
            parts.append(str(v))
    if (doc or {}).get("cpus"):
        parts.append("%d CPUs" % doc["cpus"])
    if (doc or {}).get("date"):
        parts.append(str(doc["date"])[:10])
    others = (doc or {}).get("others_cpu_pct")
    if isinstance(others, (int, float)):
        parts.append("other processes used %.0f%% of the CPUs" % others)
    return ", ".join(parts)


def plain_log_axis(axis):
    """Log-scale ticks at 1, 2, 5 per decade, as plain numbers (20, 50,
    100), not 2×10^1."""
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: "%g" % v))
    axis.set_minor_formatter(NullFormatter())


def save(fig, out_dir, name, written):
    path = os.path.join(out_dir, name)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    written.append(path)


def fmt_time_us(v):
    if v >= 1000:
        return "%.3g ms" % (v / 1000)
    if v >= 1:
        return "%.3g µs" % v
    return "%.3g ns" % (v * 1000)


# ---- rk demo: persistent vs traditional -----------------------------------

DEMO_METRICS = [
    ("inject_us", "inject a command", 1.0),
    ("step_us", "single compute step", 1.0),
    ("mixed_300_ms", "mixed workload, 300 ops", 1000.0),
]


def software_note(device):
    d = device.lower()
    if "pthread" in d or "pocl" in d:
        return "PoCL, software"
    if "llvmpipe" in d or "lavapipe" in d:
        return "lavapipe, software"
    return device[:22]


def draw_demo(results, out_dir, written):
    docs = []
    for name in sorted(os.listdir(results)):
        if name.startswith("demo-") and name.endswith(".json"):
            doc = load(os.path.join(results, name))
            if doc and doc.get("modes"):
                docs.append(doc)
    if not docs:
        return "no demo-*.json"
    order = {"cuda": 0, "metal": 1, "cpu": 2, "webgpu": 3, "opencl": 4}
    docs.sort(key=lambda d: order.get(d["backend"], 9))
    fig, axes = plt.subplots(1, 3, figsize=(12, 4.2))
    width = 0.4
    for ax, (key, title, scale) in zip(axes, DEMO_METRICS):
        for i, doc in enumerate(docs):
            for j, mode in enumerate(("traditional", "persistent")):
                m = next((x for x in doc["modes"] if x["mode"] == mode), None)
                if not m or key not in m:
                    continue
                s = m[key]
                p50, p10, p90 = (s["p50"] * scale, s["p10"] * scale,
                                 s["p90"] * scale)
                x = i + (j - 0.5) * width
                ax.bar(x, p50, width, color=MODE_COLORS[mode],
                       label=mode if i == 0 else None)
                ax.errorbar(x, p50, yerr=[[p50 - p10], [p90 - p50]],
                            color="black", capsize=3, lw=1)
                ax.annotate(fmt_time_us(p50), (x, p90), ha="center",
                            va="bottom", fontsize=7.5, xytext=(0, 2),
                            textcoords="offset points", rotation=90 if
                            len(docs) > 2 else 0)
        ax.set_yscale("log")
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, hi * 12)  # room for the labels
        ax.set_title(title)
        ax.set_xticks(range(len(docs)))
        labels = []
        for d in docs:
            note = software_note(d.get("device", ""))
            labels.append(d["backend"] if d["backend"] == "cpu"
                          else "%s\n%s" % (d["backend"],
                                            note.replace(", ", "\n")))
        ax.set_xticklabels(labels)
        ax.grid(axis="x", visible=False)
    axes[0].set_ylabel("time, µs (log scale)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", ncol=2, frameon=False,
               bbox_to_anchor=(1.0, 1.0))
    fig.suptitle("rk demo: one actor, traditional (a launch per command) vs "
                 "persistent (resident)\nmedian, bars p10–p90 over %s samples"
                 " — %s" % (docs[0].get("samples", "?"),
                            docs[0].get("device", "")), fontsize=11,
                 x=0.02, ha="left")
    fig.tight_layout()
    save(fig, out_dir, "demo.png", written)
    return None


# ---- Cost model: crossover curves and regret --------------------------------

def cell_size(cell):
    return cell["n"]


def draw_crossover(results, out_dir, written):
    doc = load(os.path.join(results, "regret-software.json")) or load(
        os.path.join(results, "regret.json"))
    if not doc:
        return "no regret-software.json or regret.json"
    cands = doc["candidates"]
    cells = [c for c in doc["cells"] if c["inputs"] == "host"]
    ops = []
    for c in cells:
        if c["op"] not in ops:
            ops.append(c["op"])
    ncol = 4
    nrow = math.ceil((len(ops) + 1) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(12, 3.0 * nrow),
                             squeeze=False)
    for k, op in enumerate(ops):
        ax = axes[k // ncol][k % ncol]
        rows = sorted((c for c in cells if c["op"] == op), key=cell_size)
        xs = [cell_size(c) for c in rows]
        for i, name in enumerate(cands):
            col = color_of(name)
            med = [c["median"][i] * 1e6 for c in rows]
            lo = [c["p10"][i] * 1e6 for c in rows]
            hi = [c["p90"][i] * 1e6 for c in rows]
            pred = [c["predicted"][i] * 1e6 for c in rows]
            ax.plot(xs, med, "-o", color=col, ms=3, lw=1.5)
            ax.fill_between(xs, lo, hi, color=col, alpha=0.2, lw=0)
            ax.plot(xs, pred, "--", color=col, lw=1.2)
        # The model's pick per size, as a strip of squares along the bottom,
        # below the lowest curve.
        ax.set_yscale("log")
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo / 6, hi)
        for c in rows:
            ax.plot(cell_size(c), 0.03, "s", transform=ax.get_xaxis_transform(),
                    color=color_of(cands[c["model_pick"]]), ms=5, clip_on=False)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        unit = {"matvec": "n (n×n matrix)", "matmul": "n (n×n×n)"}.get(
            op, "n (elements)")
        ax.set_xlabel(unit)
        ax.set_title(op)
        if k % ncol == 0:
            ax.set_ylabel("time per call, µs")
    # The last panel: the legend.
    leg = axes[-1][-1]
    for k in range(len(ops), nrow * ncol - 1):
        axes[k // ncol][k % ncol].axis("off")
    leg.axis("off")
    handles = []
    for name in cands:
        sw = " (software device)" if name.split(":")[0] in (
            "opencl", "webgpu") else ""
        handles.append(plt.Line2D([], [], color=color_of(name), lw=2,
                                  label=name + sw))
    handles.append(plt.Line2D([], [], color="black", lw=1.5, marker="o",
                              ms=3, label="measured median (band p10–p90)"))
    handles.append(plt.Line2D([], [], color="black", lw=1.2, ls="--",
                              label="predicted by the cost model"))
    handles.append(plt.Line2D([], [], color="black", marker="s", lw=0, ms=5,
                              label="the model's choice (bottom strip)"))
    leg.legend(handles=handles, loc="center", frameon=False)
    machine = doc.get("machine", "").split("; gpu=")[0]
    fig.suptitle("Cost model: predicted and measured time per call of each "
                 "candidate, inputs on the host — %s" % machine, fontsize=11)
    fig.tight_layout()
    save(fig, out_dir, "cost-crossover.png", written)
    return None


def size_label(op, n):
    """16, 256, 4K, 1M (K = 1024) for vector sizes."""
    if op in ("matvec", "matmul"):
        return str(n)
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d%s" % (n >> shift, unit)
    return str(n)


def draw_regret(results, out_dir, written):
    doc = load(os.path.join(results, "regret.json")) or load(
        os.path.join(results, "regret-software.json"))
    if not doc:
        return "no regret.json"
    cells = [c for c in doc["cells"] if c["inputs"] == "host"]
    vec_ops = []
    for c in cells:
        if c["op"] not in ("matvec", "matmul") and c["op"] not in vec_ops:
            vec_ops.append(c["op"])
    groups = [("vector ops", vec_ops)] + [
        (op, [op]) for op in ("matvec", "matmul")
        if any(c["op"] == op for c in cells)]
    heights = [max(1, len(ops)) for _, ops in groups]
    fig, axes = plt.subplots(len(groups), 2, figsize=(12, 1.4 + 0.62 *
                                                      sum(heights) + 0.75 *
                                                      len(groups)),
                             gridspec_kw={"height_ratios": heights,
                                          "hspace": 0.6, "wspace": 0.05},
                             squeeze=False)
    norm = LogNorm(vmin=1.0, vmax=8.0)
    cmap = plt.get_cmap("Reds")
    summary = doc.get("summary", {})
    image = None
    for g, (gname, ops) in enumerate(groups):
        sizes = sorted({c["n"] for c in cells if c["op"] in ops})
        for p, (key, pname) in enumerate((("model_regret", "calibrated"),
                                          ("compat_regret", "compat"))):
            ax = axes[g][p]
            grid = [[float("nan")] * len(sizes) for _ in ops]
            for c in cells:
                if c["op"] in ops:
                    grid[ops.index(c["op"])][sizes.index(c["n"])] = c[key]
            image = ax.imshow(grid, cmap=cmap, norm=norm, aspect="auto")
            for r in range(len(ops)):
                for s in range(len(sizes)):
                    v = grid[r][s]
                    if v == v:
                        ax.text(s, r, "%.2f" % v, ha="center", va="center",
                                fontsize=8,
                                color="white" if v > 3 else "black")
            ax.set_yticks(range(len(ops)))
            ax.set_yticklabels(ops if p == 0 else [])
            ax.set_xticks(range(len(sizes)))
            ax.set_xticklabels([size_label(ops[0], n) for n in sizes])
            ax.grid(False)
            if g == 0:
                geo = summary.get(pname + "_geomean")
                worst = summary.get(pname + "_worst")
                ax.set_title("%s: geometric mean %.3f, worst %.2f" %
                             (pname, geo or float("nan"),
                              worst or float("nan")))
            ax.set_xlabel("n, elements (K = 1024)" if gname == "vector ops"
                          else "%s: n (%s)" % (gname, "n×n matrix" if gname ==
                                               "matvec" else "n×n×n"))
    bar = fig.colorbar(image, ax=axes, shrink=0.8, label="regret = time of "
                       "the choice / time of the fastest")
    bar.ax.minorticks_off()
    bar.set_ticks([1, 1.5, 2, 4, 8])
    bar.set_ticklabels(["1", "1.5", "2", "4", "≥ 8"])
    fig.suptitle("Regret of each policy's choice per cell (1.00: it picked "
                 "the fastest of %s), inputs on the host" %
                 ", ".join(doc["candidates"]), fontsize=11, x=0.45)
    save(fig, out_dir, "cost-regret.png", written)
    return None


# ---- Ops: memory-bound ops against STREAM ------------------------------------

def draw_stream(results, out_dir, written):
    doc = load(os.path.join(results, "ops.json"))
    if not doc or "bandwidth" not in doc:
        return "no ops.json"
    bw = doc["bandwidth"]
    by = bw["by_threads"]
    ops = [o["op"] for o in by[0]["ops"]]
    fig, ax = plt.subplots(figsize=(11, 3.8))
    width = 0.8 / len(by)
    colors = ["#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78"]
    for t, run in enumerate(by):
        triad = run["triad"]["median"]
        xs = [i + (t - (len(by) - 1) / 2) * width for i in range(len(ops))]
        pct = [o["pct_of_triad"] for o in run["ops"]]
        lo = [100 * o["gbs"]["p10"] / triad for o in run["ops"]]
        hi = [100 * o["gbs"]["p90"] / triad for o in run["ops"]]
        ax.bar(xs, pct, width, color=colors[t % len(colors)],
               label="%d thread%s (STREAM triad %.1f GB/s)" %
               (run["threads"], "" if run["threads"] == 1 else "s", triad))
        ax.errorbar(xs, pct, yerr=[[p - l for p, l in zip(pct, lo)],
                                   [h - p for p, h in zip(pct, hi)]],
                    fmt="none", color="black", capsize=2, lw=0.8)
    ax.axhline(100, color="black", lw=1)
    ax.axhline(90, color="#d62728", lw=1, ls="--", label="target: 90%")
    ax.set_xticks(range(len(ops)))
    ax.set_xticklabels(ops)
    ax.set_ylabel("bandwidth, % of STREAM triad")
    ax.grid(axis="x", visible=False)
    ax.legend(loc="upper right", ncol=3)
    ax.set_ylim(0, max(200, ax.get_ylim()[1] * 1.12))
    n = bw["n"]
    n_text = ("2^%d" % int(math.log2(n))) if n & (n - 1) == 0 else str(n)
    ax.set_title("rk's ops at n = %s floats (%d MiB per array) on %s, as a "
                 "share of the STREAM triad measured in the same run\n(each "
                 "array counted once; exp and sigmoid are compute-bound; bars "
                 "p10–p90) — %s" % (n_text, n * 4 // (1 << 20), bw["target"],
                                    machine_line(doc)))
    fig.tight_layout()
    save(fig, out_dir, "ops-stream.png", written)
    return None


# ---- Backends against the raw APIs -------------------------------------------

def draw_overhead(results, out_dir, written):
    panels = []
    for name, title in (("cuda", "CUDA"), ("opencl", "OpenCL"),
                        ("webgpu", "WebGPU")):
        doc = load(os.path.join(results, name + ".json"))
        if doc and doc.get("rows"):
            rows = [(r["row"], r["rk_us"], r["raw_us"]) for r in doc["rows"]]
            sw = software_note(doc.get("device", ""))
            panels.append(("%s vs %s\n(%s)" % (title, doc.get("raw", "raw"),
                                               sw), "rk", "raw API", rows))
    launch = load(os.path.join(results, "launch.json"))
    if launch and launch.get("configs"):
        rows = [(c["name"], c["rk_us"], c["omp_us"])
                for c in launch["configs"] if "rk_us" in c and "omp_us" in c]
        if rows:
            panels.append(("CPU: launch + sync vs\nan OpenMP parallel region",
                           "rk", "OpenMP", rows))
    if not panels:
        return "no opencl.json, webgpu.json, cuda.json or launch.json"
    fig, axes = plt.subplots(1, len(panels), figsize=(3.3 * len(panels) + 1,
                                                      4.2), squeeze=False)
    for ax, (title, a_name, b_name, rows) in zip(axes[0], panels):
        width = 0.38
        for i, (label, a, b) in enumerate(rows):
            for j, (s, col, nm) in enumerate(((a, "#1f77b4", a_name),
                                              (b, "#bbbbbb", b_name))):
                x = i + (j - 0.5) * width
                ax.bar(x, s["median"], width, color=col,
                       label=nm if i == 0 else None)
                ax.errorbar(x, s["median"], yerr=[[s["median"] - s["p10"]],
                                                  [s["p90"] - s["median"]]],
                            color="black", capsize=2, lw=0.8)
            ratio = a["median"] / b["median"] if b["median"] else float("nan")
            top = max(a["p90"], b["p90"])
            ax.annotate("×%.2f" % ratio, (i, top), ha="center", va="bottom",
                        fontsize=8, xytext=(0, 3), textcoords="offset points")
        ax.set_yscale("log")
        plain_log_axis(ax.yaxis)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([r[0] for r in rows], fontsize=8, rotation=30,
                           ha="right", rotation_mode="anchor")
        ax.set_title(title, fontsize=10)
        ax.grid(axis="x", visible=False)
        ax.legend(loc="upper left", fontsize=8)
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, hi * 2.5)
    axes[0][0].set_ylabel("µs per operation (log scale)")
    fig.suptitle("Backend overhead: the same operation through rk and "
                 "through the raw API, alternating rounds\nmedian, bars "
                 "p10–p90; ×r = rk / raw (target ≤ 1.2 for GPU backends) — %s"
                 % machine_line(launch or {}), fontsize=11)
    fig.tight_layout()
    save(fig, out_dir, "backend-overhead.png", written)
    return None


# ---- Actors: latency and throughput against the floor ------------------------

ACTOR_RTT = [
    ("floor_rtt", "floor: cache-line ping-pong"),
    ("ck_rtt", "Concurrency Kit ck_ring"),
    ("rk_ring_rtt", "bare rk rings"),
    ("rk_rtt", "rk actor, persistent"),
    ("rk_traditional_rtt", "rk actor, traditional"),
]
ACTOR_TPUT = [
    ("floor_tput", "floor (1 / round trip)"),
    ("ck_tput", "Concurrency Kit ck_ring"),
    ("rk_ring_tput", "bare rk rings"),
    ("rk_tput", "rk actor, persistent"),
    ("rk_traditional_tput", "rk actor, traditional"),
]


def draw_actors(results, out_dir, written):
    doc = load(os.path.join(results, "actors.json"))
    if not doc or "series" not in doc:
        return "no actors.json"
    series = doc["series"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for ax, rows, xlabel, title in (
            (axes[0], ACTOR_RTT, "round trip, ns", "round trip (one call)"),
            (axes[1], ACTOR_TPUT, "million messages per second",
             "throughput, %s messages in flight" % doc.get("window", "?"))):
        names, med, lo, hi, cols = [], [], [], [], []
        for key, label in rows:
            s = series.get(key)
            if not s or "median" not in s:
                continue
            names.append(label)
            med.append(s["median"])
            lo.append(s["median"] - s["p10"])
            hi.append(s["p90"] - s["median"])
            cols.append("#1f77b4" if key.startswith("rk_") and "ring" not in
                        key else "#bbbbbb")
        ys = list(range(len(names)))[::-1]
        ax.barh(ys, med, color=cols, xerr=[lo, hi], capsize=3,
                error_kw={"lw": 0.8})
        for y, v, h in zip(ys, med, hi):
            ax.annotate("%.3g" % v, (v + h, y), xytext=(5, 0),
                        textcoords="offset points", fontsize=8, va="center")
        ax.set_yticks(ys)
        ax.set_yticklabels(names)
        ax.set_xlabel(xlabel)
        ax.set_title(title)
        ax.grid(axis="y", visible=False)
        ax.set_xlim(0, max(m + h for m, h in zip(med, hi)) * 1.25)
    fig.suptitle("Actors on the CPU backend next to the hardware's floor and "
                 "Concurrency Kit: host and echo side on two pinned CPUs\n"
                 "median of %s rounds, bars p10–p90 — %s" %
                 (doc.get("rounds", "?"), machine_line(doc)), fontsize=11)
    fig.tight_layout()
    save(fig, out_dir, "actors.png", written)
    return None


# ---- A trace as a timeline -----------------------------------------------------

CAT_COLORS = {
    "compile": "#9467bd",
    "launch": "#1f77b4",
    "copy": "#2ca02c",
    "sync": "#d62728",
    "memory": "#8c564b",
    "backend": "#7f7f7f",
    "ops": "#17becf",
    "cost": "#bcbd22",
    "actor": "#ff7f0e",
    "user": "#e0e0e0",
}


def trace_lanes(doc):
    """Slices per thread with their nesting depth, instants, flows."""
    ev = doc["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "thread_name"}
    slices, instants, flows = {}, [], {}
    open_b = {}
    for e in sorted((e for e in ev if e["ph"] != "M"), key=lambda e: e["ts"]):
        tid = e["tid"]
        if e["ph"] == "X":
            slices.setdefault(tid, []).append(
                (e["ts"], e["ts"] + e["dur"], e["name"], e.get("cat", "")))
        elif e["ph"] == "B":
            open_b.setdefault(tid, []).append(e)
        elif e["ph"] == "E" and open_b.get(tid):
            b = open_b[tid].pop()
            slices.setdefault(tid, []).append(
                (b["ts"], e["ts"], b["name"], b.get("cat", "")))
        elif e["ph"] == "i":
            instants.append((tid, e["ts"], e["name"], e.get("cat", "")))
        elif e["ph"] in "stf":
            flows.setdefault(e.get("id"), []).append((tid, e["ts"]))
    lanes = {}
    for tid, sl in slices.items():
        sl.sort(key=lambda s: (s[0], -s[1]))
        stack, out = [], []
        for s in sl:
            while stack and stack[-1] <= s[0]:
                stack.pop()
            out.append((s, len(stack)))
            stack.append(s[1])
        lanes[tid] = out
    return names, lanes, instants, flows


def draw_timeline_axes(ax, doc, t0, t1, tids, names, lanes, instants, flows,
                       label_min_frac=0.06):
    row_h = 0.8
    ypos = {}
    y = 0
    for tid in tids:
        depth = 1 + max((d for _, d in lanes.get(tid, [])), default=0)
        ypos[tid] = (y, depth)
        y += depth + 0.6
    span = t1 - t0
    for tid in tids:
        base, depth = ypos[tid]
        for (ts, te, name, cat), d in lanes.get(tid, []):
            if te < t0 or ts > t1:
                continue
            x0 = (max(ts, t0) - t0) / 1000.0
            w = max((min(te, t1) - max(ts, t0)) / 1000.0, span / 1000.0 / 800)
            col = CAT_COLORS.get(cat, "#c5b0d5")
            ax.add_patch(Rectangle((x0, base + d), w, row_h, facecolor=col,
                                   edgecolor="white", lw=0.5))
            if w >= label_min_frac * span / 1000.0:
                ax.text(x0 + w / 2, base + d + row_h / 2, name, ha="center",
                        va="center", fontsize=8, clip_on=True,
                        color="black" if cat in ("user", "cost", "copy")
                        else "white")
    for tid, ts, name, cat in instants:
        if tid in ypos and t0 <= ts <= t1:
            base, depth = ypos[tid]
            x = (ts - t0) / 1000.0
            ax.plot([x, x], [base - 0.15, base + depth], color="#bcbd22",
                    lw=1.5)
            ax.text(x, base + depth + 0.05, name, fontsize=7, ha="left",
                    va="bottom", rotation=0, color="#6b6b00")
    def flow_y(tid, ts):
        """The middle of the deepest slice of `tid` holding ts."""
        depth = 0
        for (sa, sb, _, _), d in lanes.get(tid, []):
            if sa <= ts <= sb:
                depth = max(depth, d)
        return ypos[tid][0] + depth + row_h / 2

    for fid, pts in flows.items():
        pts = [p for p in pts if p[0] in ypos and t0 <= p[1] <= t1]
        for (ta, xa), (tb, xb) in zip(pts, pts[1:]):
            ya = flow_y(ta, xa)
            yb = flow_y(tb, xb)
            ax.add_patch(FancyArrowPatch(((xa - t0) / 1000.0, ya),
                                         ((xb - t0) / 1000.0, yb),
                                         arrowstyle="-|>", mutation_scale=10,
                                         color="#333333", lw=1.0, zorder=5))
    ax.set_xlim(0, span / 1000.0)
    ax.set_ylim(-0.4, y)
    ax.invert_yaxis()
    ax.set_yticks([ypos[t][0] + 0.4 for t in tids])
    ax.set_yticklabels(["%s (%d)" % (names.get(t, "thread"), t) for t in tids])
    ax.grid(axis="y", visible=False)


def busiest_window(slices, width):
    """A window at most `width` µs wide around the slices shorter than it
    that start closest together: it starts at one slice's start, holds the
    most starts, and ends where the last of them ends (plus a margin)."""
    short = sorted((s for s in slices if s[1] - s[0] < width),
                   key=lambda s: s[0])
    if not short:
        return None
    best_i, best_n, j = 0, -1, 0
    for i in range(len(short)):
        while j < len(short) and short[j][0] <= short[i][0] + width:
            j += 1
        if j - i > best_n:
            best_i, best_n = i, j - i
    chosen = short[best_i:best_i + best_n]
    lo = chosen[0][0]
    hi = min(max(s[1] for s in chosen), lo + width)
    margin = max((hi - lo) * 0.04, 1.0)
    return lo - margin, hi + margin


def densest(points, width):
    """The start of the `width`-wide window holding the most points, and
    the points in it."""
    points = sorted(points)
    best_i, best_n, j = 0, -1, 0
    for i in range(len(points)):
        while j < len(points) and points[j] <= points[i] + width:
            j += 1
        if j - i > best_n:
            best_i, best_n = i, j - i
    return points[best_i:best_i + best_n]


def flow_window(flows, slices, width):
    """A window around the densest run of actor messages: from the first
    slice that holds one of its flow points to the last one's end."""
    pts = [ts for fl in flows.values() for _, ts in fl]
    if not pts:
        return None
    chosen = densest(pts, width)
    lo, hi = chosen[0], chosen[-1]
    for s in slices:  # widen to the slices the flows bind to
        if s[0] <= lo <= s[1] and s[1] - s[0] < width:
            lo = min(lo, s[0])
        if s[0] <= hi <= s[1] and s[1] - s[0] < width:
            hi = max(hi, s[1])
    margin = max((hi - lo) * 0.04, 1.0)
    return lo - margin, hi + margin


def draw_timeline(trace_path, out_png, title=None):
    doc = load(trace_path)
    if not doc:
        raise SystemExit("report.py: cannot read %s" % trace_path)
    names, lanes, instants, flows = trace_lanes(doc)
    all_slices = [s for sl in lanes.values() for s, _ in sl]
    if not all_slices:
        raise SystemExit("report.py: %s has no slices" % trace_path)
    t0 = min(s[0] for s in all_slices)
    t1 = max(s[1] for s in all_slices)
    tids = sorted(lanes, key=lambda t: min(s[0] for s, _ in lanes[t]))
    short = [s for s in all_slices if s[3] != "user"]
    width = max((t1 - t0) / 60.0, 50.0)
    zooms = [busiest_window(short, width) or (t0, t1)]
    actors = flow_window(flows, short, width)
    if actors and (actors[0] > zooms[0][1] or actors[1] < zooms[0][0]):
        zooms.append(actors)
    zooms.sort()
    lane_rows = sum(1 + max((d for _, d in lanes[t]), default=0) for t in tids)
    fig, axes = plt.subplots(
        1 + len(zooms), 1, figsize=(12, (1.2 + 0.5 * lane_rows) *
                                    (1 + len(zooms)) + 0.6),
        gridspec_kw={"hspace": 0.7})
    draw_timeline_axes(axes[0], doc, t0, t1, tids, names, lanes, instants,
                       flows)
    axes[0].set_xlabel("ms since the first event")
    for k, (lo, hi) in enumerate(zooms):
        axes[0].add_patch(Rectangle(((lo - t0) / 1000.0, -0.4),
                                    max((hi - lo) / 1000.0,
                                        (t1 - t0) / 1000.0 / 300), 100,
                                    fill=False, ls="--", lw=1,
                                    color="black"))
        axes[0].annotate("%c" % (ord("A") + k), ((hi - t0) / 1000.0, 0),
                         xytext=(3, 0), textcoords="offset points",
                         fontsize=9, va="top")
        ax = axes[1 + k]
        draw_timeline_axes(ax, doc, lo, hi, tids, names, lanes, instants,
                           flows, label_min_frac=0.035)
        ax.set_xlabel("ms since %.3f ms" % ((lo - t0) / 1000.0))
        ax.set_title("%c: %.2f ms" % (ord("A") + k, (hi - lo) / 1000.0))
    axes[0].set_title("the whole run, %.1f ms (dashed: the parts below)" %
                      ((t1 - t0) / 1000.0))
    handles = [Rectangle((0, 0), 1, 1, color=c, label=k)
               for k, c in CAT_COLORS.items()
               if any(s[3] == k for s in all_slices) or k == "cost"]
    if flows:
        handles.append(plt.Line2D([], [], color="#333333", lw=1.0,
                                  marker=">", ms=5,
                                  label="actor message (flow)"))
    fig.legend(handles=handles, loc="upper center", ncol=len(handles),
               frameon=False, bbox_to_anchor=(0.5, 0.02))
    fig.suptitle(title or "rk's trace of %s, drawn by scripts/report.py "
                 "(open the JSON in ui.perfetto.dev or chrome://tracing)" %
                 doc["traceEvents"][0].get("args", {}).get("name", "a run"),
                 fontsize=11)
    fig.savefig(out_png, dpi=DPI, bbox_inches="tight")
    plt.close(fig)


# ---- Main ------------------------------------------------------------------------

def main(argv):
    if len(argv) >= 3 and argv[0] == "--timeline":
        title = None
        if len(argv) == 5 and argv[3] == "--title":
            title = argv[4]
        elif len(argv) != 3:
            print(__doc__, file=sys.stderr)
            return 2
        draw_timeline(argv[1], argv[2], title)
        print("wrote %s" % argv[2])
        return 0
    if len(argv) != 2 or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    results, out_dir = argv
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for fn in (draw_demo, draw_crossover, draw_regret, draw_stream,
               draw_overhead, draw_actors):
        why = fn(results, out_dir, written)
        if why:
            print("report: %s skipped: %s" % (fn.__name__[5:], why),
                  file=sys.stderr)
    trace = os.path.join(results, "trace.json")
    if os.path.exists(trace):
        path = os.path.join(out_dir, "trace-timeline.png")
        draw_timeline(trace, path)
        written.append(path)
    else:
        print("report: timeline skipped: no trace.json", file=sys.stderr)
    for path in written:
        print("wrote %s" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
