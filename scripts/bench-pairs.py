#!/usr/bin/env python3
"""Compare two builds of rk with a benchmark, run alternately in pairs.

On a noisy machine (a VM whose speed flips within seconds) two full runs
of a benchmark, one per build, can differ by more than the change being
measured. This runs short `--json` runs of a benchmark (bench_actors by
default) from build A and build B one after the other, PAIRS times, and reports for each figure the
median of the per-pair ratios B / A with its quartiles, next to the
medians of each build: a change that holds in most pairs shows as a ratio
whose quartiles stay on one side of 1.

  scripts/bench-pairs.py --a /tmp/base/build --b build --only rk --pairs 40
  scripts/bench-pairs.py --a /tmp/base/build --b build \
      --bench bench/actors/bench_k2k --args --quick --keys hop_one_way_ns

The two runs of a pair take turns going first. `--min KEY=VALUE` keeps
only pairs in which both runs measured KEY at VALUE or more and runs
others in their place (at most five times PAIRS runs in all): with
`--only ck,rk-stream --min ck_msgs_per_s=45e6`, a comparison of the
pipelined path counts only pairs that caught the machine in its fast
state, where the host's own work shows.

Each build directory must hold the benchmark. The exit status is non-zero
only when a run fails.
"""
import argparse
import json
import statistics
import subprocess
import sys

DEFAULT_KEYS = ("rk_call_rtt_ns,rk_msgs_per_s,rk_batch_msgs_per_s,"
                "rk_msgs_per_s_2_producers,rk_msgs_per_s_8_producers")


def run(build, bench, extra):
    cmd = [build + "/" + bench, "--json"] + extra
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("bench-pairs: %s failed:\n%s" % (" ".join(cmd), out.stderr))
    return json.loads(out.stdout)


def quartiles(xs):
    xs = sorted(xs)
    return xs[len(xs) // 4], statistics.median(xs), xs[(3 * len(xs)) // 4]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="build directory A (before)")
    ap.add_argument("--b", required=True, help="build directory B (after)")
    ap.add_argument("--bench", default="bench/actors/bench_actors",
                    help="the benchmark, relative to the build directories")
    ap.add_argument("--only", default="rk",
                    help="bench_actors --only groups (default rk)")
    ap.add_argument("--pairs", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=5,
                    help="bench_actors --rounds per run (default 5)")
    ap.add_argument("--args", nargs=argparse.REMAINDER,
                    help="the benchmark's arguments instead of --only and "
                    "--rounds (everything after --args)")
    ap.add_argument("--keys", default=DEFAULT_KEYS,
                    help="JSON figures to compare, comma-separated")
    ap.add_argument("--min", action="append", default=[],
                    metavar="KEY=VALUE",
                    help="count only pairs whose two runs have KEY >= VALUE "
                    "(repeatable)")
    args = ap.parse_args()
    mins = []
    for m in args.min:
        key, sep, value = m.partition("=")
        try:
            mins.append((key, float(value)))
        except ValueError:
            sep = ""
        if not sep or not key:
            sys.exit("bench-pairs: --min wants KEY=VALUE, got %r" % m)
    keys = [k for k in args.keys.split(",") if k]
    extra = (args.args if args.args is not None else
             ["--only", args.only, "--rounds", str(args.rounds)])
    a_vals = {k: [] for k in keys}
    b_vals = {k: [] for k in keys}
    ratios = {k: [] for k in keys}
    kept = tried = 0
    while kept < args.pairs and tried < 5 * args.pairs:
        if tried % 2 == 0:
            a = run(args.a, args.bench, extra)
            b = run(args.b, args.bench, extra)
        else:
            b = run(args.b, args.bench, extra)
            a = run(args.a, args.bench, extra)
        tried += 1
        for r in (a, b):
            for k in keys + [key for key, _ in mins]:
                if isinstance(r.get(k), dict):  # a summary: its median
                    r[k] = r[k].get("median")
        if any((r.get(key) or 0) < value for r in (a, b)
               for key, value in mins):
            continue
        kept += 1
        for k in keys:
            if a.get(k) and b.get(k):
                a_vals[k].append(a[k])
                b_vals[k].append(b[k])
                ratios[k].append(b[k] / a[k])
    print("%-28s %8s %8s %8s %12s %12s" %
          ("figure", "B/A p25", "median", "p75", "A median", "B median"))
    for k in keys:
        if not ratios[k]:
            continue
        lo, mid, hi = quartiles(ratios[k])
        print("%-28s %8.3f %8.3f %8.3f %12.4g %12.4g" %
              (k, lo, mid, hi, statistics.median(a_vals[k]),
               statistics.median(b_vals[k])))
    print("%d pairs%s, %s --json %s" %
          (kept, " (%d left out by --min)" % (tried - kept) if mins else "",
           args.bench, " ".join(extra)))


if __name__ == "__main__":
    main()
