"""check_json.py SCENARIO RK [ARG...] - checks the --json output of an rk
command: it must parse (the same parser as `python3 -m json.tool`) and hold
what the scenario expects.

  version           `rk version --json` and `rk --version --json`: the
                    versions, every backend kind in order, cpu built in and
                    found with its C compiler, metal built in (found on
                    macOS; elsewhere the reason names macOS)
  transpile_list    `rk transpile FILE --list --json` for ARG (the codegen
                    kernels directory): each entry's kind and parameters
  select            `rk select add 1000 --json`: each candidate says whether
                    its rates were measured
  bench             `rk bench --json --quick`: on cpu alone, every figure
                    there with p10 <= p50 <= p90; on every backend (cuda
                    pointed at a library that does not exist), each kind
                    in order, cuda not available with its reason, every
                    backend that opened measured without error
"""
import json
import os
import subprocess
import sys

KINDS = ["cpu", "cuda", "metal", "webgpu", "opencl"]


def run_json(args):
    env = dict(os.environ)
    env.pop("RK_BACKEND", None)
    run = subprocess.run(args, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    if run.returncode != 0:
        sys.exit("%s exited %d:\n%s" % (" ".join(args), run.returncode,
                                        run.stderr.decode(errors="replace")))
    try:
        return json.loads(run.stdout.decode("utf-8"))
    except ValueError as e:
        sys.exit("%s: not valid JSON (%s):\n%s" %
                 (" ".join(args), e, run.stdout.decode(errors="replace")))


def check(cond, what, doc):
    if not cond:
        sys.exit("FAILED: %s\n%s" % (what, json.dumps(doc, indent=2)))


def version(rk):
    for args in ([rk, "version", "--json"], [rk, "--version", "--json"]):
        doc = run_json(args)
        check(doc.get("rk") and doc.get("library") == doc.get("rk"),
              "rk and library versions", doc)
        build = doc.get("build")
        check(isinstance(build, dict) and
              isinstance(build.get("compiler"), str) and build["compiler"] and
              isinstance(build.get("lto"), bool),
              "build: compiler and lto", doc)
        backends = doc.get("backends")
        check(isinstance(backends, list) and
              [b.get("name") for b in backends] == KINDS,
              "backends listed as %s" % KINDS, doc)
        by_name = {b["name"]: b for b in backends}
        cpu = by_name["cpu"]
        check(cpu["built_in"] is True and cpu["found"] is True and
              cpu["reason"] is None and isinstance(cpu["library"], str) and
              cpu["library"], "cpu found with its compiler", doc)
        metal = by_name["metal"]
        check(metal["built_in"] is True and
              (metal["found"] or "macOS" in metal["reason"]),
              "metal built in, found or unavailable off macOS", doc)
        for b in backends:
            check(isinstance(b["built_in"], bool) and
                  isinstance(b["found"], bool) and
                  (b["library"] is None) == (not b["found"]) and
                  (b["reason"] is None) == b["found"],
                  "%s: library or reason, not both" % b["name"], doc)


def transpile_list(rk, kernels):
    doc = run_json([rk, "transpile", os.path.join(kernels, "heat2d.c"),
                    "--list", "--json"])
    check(doc["file"].endswith("heat2d.c"), "file", doc)
    entries = doc["entries"]
    check(len(entries) == 1 and entries[0]["name"] == "heat2d" and
          entries[0]["kind"] == "stencil", "one stencil heat2d", doc)
    e = entries[0]
    check(e["stencil"] == {"dims": 2, "tile": [16, 16, 1], "halo": 1},
          "stencil tile 16 x 16, halo 1", doc)
    params = e["params"]
    check([p["name"] for p in params][:2] == ["nx", "ny"] and
          params[0]["kind"] == "i32" and params[0]["size"] == 4,
          "params start with the domain size", doc)
    check(any(p["kind"] == "struct" and p["type"] == "heat_params_t" and
              p["size"] == 8 for p in params), "the struct parameter", doc)

    doc = run_json([rk, "transpile", os.path.join(kernels, "saxpy.c"),
                    "--list", "--json"])
    e = doc["entries"][0]
    check(e["kind"] == "kernel" and e["stencil"] is None and
          e["batch_of"] is None and e["uses_barrier"] is False and
          e["loops"] is False,
          "saxpy is a plain kernel without loops", doc)
    x = [p for p in e["params"] if p["name"] == "x"][0]
    check(x == {"name": "x", "type": "const float *", "kind": "ptr",
                "size": 8, "elem_size": 4, "read_only": True},
          "x is a read-only float buffer", doc)

    doc = run_json([rk, "transpile", os.path.join(kernels, "actor_counter.c"),
                    "--list", "--json"])
    names = [(e["kind"], e["name"], e["batch_of"]) for e in doc["entries"]]
    check(names == [("handler", "counter", None),
                    ("kernel", "rk_batch_counter", "counter")],
          "a handler and its batch entry", doc)

    doc = run_json([rk, "transpile", os.path.join(kernels, "matmul_tiled.c"),
                    "--list", "--json"])
    e = doc["entries"][0]
    check(e["uses_barrier"] is True and e["shared_bytes"] == 2112,
          "matmul_tiled: barrier and 2112 bytes of shared memory", doc)


def select(rk):
    doc = run_json([rk, "select", "add", "1000", "--json"])
    cands = doc["candidates"]
    check(cands and all(isinstance(c.get("measured"), bool) for c in cands),
          "every candidate says whether it was measured", doc)
    if not doc["profile"]["measured"]:
        check(not any(c["measured"] for c in cands),
              "no profile: no candidate measured", doc)


FIGURES = ["launch_us", "call_us", "traditional_call_us", "stream_msgs_per_s"]


def bench_entry_ok(b, doc):
    check(b["ok"] is True and "error" not in b, "%s measured" % b["backend"],
          doc)
    check(isinstance(b["device"], str) and b["device"],
          "%s names its device" % b["backend"], doc)
    check(b["persistent_execution"] in ("resident", "relaunch"),
          "%s: how its persistent actor runs" % b["backend"], doc)
    for f in FIGURES:
        v = b[f]
        check(isinstance(v, dict) and 0 < v["p10"] <= v["p50"] <= v["p90"],
              "%s: %s has 0 < p10 <= p50 <= p90" % (b["backend"], f), doc)


def bench(rk):
    doc = run_json([rk, "bench", "--backend", "cpu", "--quick", "--rounds",
                    "2", "--json"])
    check(doc["benchmark"] == "rk bench" and doc["rounds"] == 2 and
          doc["quick"] is True and doc["window"] == 64 and
          (doc["others_cpu_pct"] is None or
           0 <= doc["others_cpu_pct"] <= 100), "the run's header", doc)
    check([b["backend"] for b in doc["backends"]] == ["cpu"],
          "--backend cpu: cpu alone", doc)
    check(doc["backends"][0]["available"] is True, "cpu available", doc)
    bench_entry_ok(doc["backends"][0], doc)
    os.environ["RK_CUDA_LIB"] = "/nonexistent/libcuda.so.1"
    doc = run_json([rk, "bench", "--quick", "--rounds", "1", "--json"])
    names = [b["backend"] for b in doc["backends"]]
    check(names == [k for k in KINDS if k in names] and "cpu" in names and
          "cuda" in names, "every kind built in, in order", doc)
    for b in doc["backends"]:
        if b["backend"] == "cuda":
            check(b["available"] is False and "libcuda" in b["reason"],
                  "cuda not available, with its reason", doc)
        elif b["available"]:
            bench_entry_ok(b, doc)
        else:
            check(isinstance(b["reason"], str) and b["reason"],
                  "%s: why not available" % b["backend"], doc)


def main():
    scenario, rk = sys.argv[1], sys.argv[2]
    if scenario == "version":
        version(rk)
    elif scenario == "transpile_list":
        transpile_list(rk, sys.argv[3])
    elif scenario == "select":
        select(rk)
    elif scenario == "bench":
        bench(rk)
    else:
        sys.exit("unknown scenario %s" % scenario)
    print("%s: passed" % scenario)


if __name__ == "__main__":
    main()
