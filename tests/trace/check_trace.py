#!/usr/bin/env python3
"""check_trace.py PROGRAM - runs the known program (trace_program.c) under
RK_TRACE, parses the trace it writes and checks its events.

Twice: once writing the trace at exit (RK_TRACE=<dir>/t-%p.json, so the
file name carries the process id), once with the program calling
rk_trace_stop() itself. Each time the file must be valid JSON in the Chrome
trace-event object form, and hold, in order, the compile of twice.c that
missed the cache and the one that hit it, the copies, launches and
synchronizations on the default stream and on a stream, the ops library's
add with the cost model's decision and its predictions inside it, an actor
call per request with the correlation ids joined by flow events, all
inside the user range "trace program"; slices on one thread must nest.
Exit 0 when every check passes, 1 otherwise."""
import json
import os
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAILED: " + what)
    return cond


def run(program, stop):
    tmp = tempfile.mkdtemp(prefix="rk-trace-")
    env = dict(os.environ)
    env["RK_TRACE"] = os.path.join(tmp, "t-%p.json")
    env.pop("RK_BACKEND", None)
    args = [program] + (["--stop"] if stop else [])
    p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=240)
    sys.stdout.write(out)
    if not check(p.returncode == 0,
                 "%s exited %d: %s" % (args, p.returncode, err)):
        return None
    files = os.listdir(tmp)
    if not check(files == ["t-%d.json" % p.pid],
                 "trace files %s, not t-%d.json" % (files, p.pid)):
        return None
    with open(os.path.join(tmp, files[0])) as f:
        text = f.read()
    os.remove(os.path.join(tmp, files[0]))
    os.rmdir(tmp)
    try:
        return json.loads(text)
    except ValueError as e:
        check(False, "the trace is not valid JSON: %s" % e)
        return None


def nests(slices):
    """Slices of one thread (ts, end, name) either nest or do not meet."""
    stack = []
    for ts, end, name in sorted(slices, key=lambda s: (s[0], -s[1])):
        while stack and stack[-1][1] <= ts:
            stack.pop()
        if stack and end > stack[-1][1] + 0.0015:
            return "%s [%s, %s] overlaps %s [%s, %s]" % (
                name, ts, end, stack[-1][2], stack[-1][0], stack[-1][1])
        stack.append((ts, end, name))
    return None


def check_trace(doc, mode):
    if not check(isinstance(doc, dict) and isinstance(
            doc.get("traceEvents"), list), mode + ": no traceEvents list"):
        return
    other = doc.get("otherData", {})
    check(other.get("dropped_events") == 0,
          mode + ": events dropped: %s" % other)
    ev = doc["traceEvents"]
    for e in ev:
        ok = all(k in e for k in ("name", "ph", "pid", "tid"))
        ok = ok and (e["ph"] == "M" or isinstance(e.get("ts"), (int, float)))
        ok = ok and (e["ph"] != "X" or e.get("dur", -1) >= 0)
        if not check(ok, mode + ": malformed event %s" % e):
            return
    check(other.get("events") == len(ev) - 1,
          mode + ": otherData.events %s, %d events" % (other.get("events"),
                                                       len(ev)))
    pid = ev[0]["pid"]
    check(ev[0]["name"] == "process_name" and
          ev[0]["args"]["name"] == "trace_program",
          mode + ": first event %s" % ev[0])
    timed = sorted((e for e in ev if e["ph"] != "M"), key=lambda e: e["ts"])

    def named(name, cat=None):
        return [e for e in timed if e["name"] == name and
                (cat is None or e.get("cat") == cat)]

    # The user range, on the main thread, around everything else.
    begins = [e for e in timed if e["ph"] == "B"]
    ends = [e for e in timed if e["ph"] == "E"]
    if not check(len(begins) == 1 and len(ends) == 1 and
                 begins[0]["name"] == "trace program" and
                 begins[0].get("cat") == "user" and
                 ends[0]["tid"] == begins[0]["tid"],
                 mode + ": user range: %s %s" % (begins, ends)):
        return
    main_tid = begins[0]["tid"]
    t_begin, t_end = begins[0]["ts"], ends[0]["ts"]
    # Linux numbers the main thread with the process id; macOS's thread
    # ids (and the POSIX build's counter) do not (RK_TRACE_TID_IS_PID=0).
    if os.environ.get("RK_TRACE_TID_IS_PID", "1") == "1":
        check(main_tid == pid, mode + ": the main thread's tid is not the pid")
    else:
        check(isinstance(main_tid, int) and main_tid != 0,
              mode + ": the main thread's tid %r" % main_tid)
    check(any(e["ph"] == "M" and e["name"] == "thread_name" and
              e["tid"] == main_tid for e in ev),
          mode + ": no thread_name for the main thread")

    def inside(e):
        return t_begin <= e["ts"] and e["ts"] + e.get("dur", 0) <= t_end

    opened = named("open backend", "backend")
    check(len(opened) == 1 and opened[0]["args"].get("backend") == "cpu" and
          inside(opened[0]), mode + ": open backend: %s" % opened)
    ctxs = named("create context", "backend")
    check(len(ctxs) == 1 and ctxs[0]["args"].get("status") == "ok",
          mode + ": create context: %s" % ctxs)

    compiles = [e for e in named("compile", "compile")
                if e["args"].get("source") == "twice.c"]
    if check(len(compiles) == 2, mode + ": compiles of twice.c: %s" %
             compiles):
        check(compiles[0]["args"].get("cache_hit") is False and
              compiles[1]["args"].get("cache_hit") is True,
              mode + ": cache miss then hit: %s" % compiles)
        check(all(c["args"].get("kernels") == 1 and
                  c["args"].get("backend") == "cpu" and
                  c["args"].get("status") == "ok" and inside(c)
                  for c in compiles), mode + ": compile args %s" % compiles)

    launches = [e for e in timed if e.get("cat") == "launch" and
                e["args"].get("kernel") == "twice"]
    if check(len(launches) == 2, mode + ": launches of twice: %s" %
             launches):
        check(launches[0]["name"] == "launch twice" and
              launches[0]["args"].get("grid") == "4,1,1" and
              launches[0]["args"].get("block") == "64,1,1" and
              launches[0]["args"].get("stream") == 0 and
              launches[1]["args"].get("stream", 0) > 0,
              mode + ": launch args %s" % launches)
        check(compiles and launches[0]["ts"] > compiles[-1]["ts"],
              mode + ": launch before the compile")
    to_dev = [e for e in named("copy to device", "copy")
              if e["args"].get("bytes") == 1024]
    to_host = [e for e in named("copy to host", "copy")
               if e["args"].get("bytes") == 1024]
    check(len(to_dev) == 2 and len(to_host) == 2,
          mode + ": copies %s %s" % (to_dev, to_host))
    if len(to_dev) == 2 and len(launches) == 2 and len(to_host) == 2:
        check(to_dev[0]["ts"] < launches[0]["ts"] < to_host[0]["ts"],
              mode + ": copy in, launch, copy out out of order")
        check(to_dev[1]["args"]["stream"] == launches[1]["args"]["stream"]
              == to_host[1]["args"]["stream"] > 0,
              mode + ": the stream copies name another stream")
    syncs = named("synchronize context", "sync")
    check(len(syncs) >= 1 and syncs[0]["args"].get("status") == "ok" and
          len(launches) == 2 and syncs[0]["ts"] > launches[0]["ts"],
          mode + ": context synchronize %s" % syncs[:3])
    ssyncs = named("synchronize stream", "sync")
    check(len(ssyncs) == 1 and len(launches) == 2 and
          ssyncs[0]["args"].get("stream") == launches[1]["args"]["stream"],
          mode + ": stream synchronize %s" % ssyncs)
    allocs = [e for e in named("allocate", "memory")
              if e["args"].get("bytes") == 1024]
    frees = named("free", "memory")
    check(len(allocs) == 1 and
          any(f["args"].get("ptr") == allocs[0]["args"].get("ptr")
              for f in frees), mode + ": allocate/free %s %s" % (allocs,
                                                                   frees))

    # The ops library's add and the cost model's decision inside it.
    adds = named("ops add", "ops")
    costs = named("cost add", "cost")
    if check(len(adds) == 1 and len(costs) == 1,
             mode + ": ops add %s, cost add %s" % (adds, costs)):
        a, c = adds[0], costs[0]
        check(a["args"].get("n") == 256 and a["args"].get("status") == "ok"
              and a["args"].get("ran") == c["args"].get("ran"),
              mode + ": ops add args %s" % a)
        check(c["ph"] == "i" and c["tid"] == a["tid"] and
              a["ts"] <= c["ts"] <= a["ts"] + a["dur"],
              mode + ": the decision is not inside the op")
        preds = {k: v for k, v in c["args"].items()
                 if k.startswith("pred_us:")}
        check(c["args"].get("policy") == "calibrated" and
              c["args"].get("n") == 256 and "pred_us:scalar" in preds and
              all(isinstance(v, (int, float)) and v > 0
                  for v in preds.values()),
              mode + ": cost decision args %s" % c["args"])
        ran = c["args"].get("ran")
        check(("pred_us:" + str(ran)) in preds and
              preds["pred_us:" + str(ran)] == min(preds.values()),
              mode + ": ran %s, not the fastest prediction of %s" %
              (ran, preds))
        check(abs(a["args"].get("predicted_us", -1) -
                  preds.get("pred_us:" + str(ran), -2)) < 1e-6 *
              max(1.0, a["args"].get("predicted_us", 1)),
              mode + ": the op's predicted_us is not the decision's")

    check_actor(timed, mode, inside)

    # Slices nest on every thread.
    by_tid = {}
    for e in timed:
        if e["ph"] == "X":
            by_tid.setdefault(e["tid"], []).append(
                (e["ts"], e["ts"] + e["dur"], e["name"]))
    for tid, slices in by_tid.items():
        bad = nests(slices)
        check(bad is None, mode + ": thread %d: %s" % (tid, bad))


def check_actor(timed, mode, inside):
    """Two calls of add_one: a "call" slice each on the main thread with its
    correlation id, the handler's slice on the actor's side with the same
    id, and a flow from the call's send to the reply's receipt."""
    calls = [e for e in timed if e.get("cat") == "actor" and
             e["name"] == "actor call"]
    if not check(len(calls) == 2, mode + ": actor calls: %s" % calls):
        return
    ids = [c["args"].get("correlation_id") for c in calls]
    check(all(isinstance(i, int) and i > 0 for i in ids) and ids[0] != ids[1],
          mode + ": correlation ids %s" % ids)
    check(all(c["args"].get("status") == "ok" and inside(c) for c in calls),
          mode + ": call args %s" % calls)
    handled = [e for e in timed if e.get("cat") == "actor" and
               e["name"] == "handler add_one"]
    hid = [h["args"].get("correlation_id") for h in handled]
    check(all(i in hid for i in ids), mode + ": handler slices %s for %s" %
          (hid, ids))
    for c in calls:
        cid = c["args"].get("correlation_id")
        flows = [e for e in timed if e["ph"] in "stf" and
                 e.get("cat") == "actor" and e.get("id") == cid]
        phs = "".join(e["ph"] for e in flows)
        if not check(phs.startswith("s") and phs.endswith("f"),
                     mode + ": flow of %s: %s" % (cid, flows)):
            continue
        h = [x for x in handled if x["args"].get("correlation_id") == cid]
        check(c["ts"] <= flows[0]["ts"] <= flows[-1]["ts"] <=
              c["ts"] + c["dur"] and
              (not h or flows[0]["ts"] <= h[0]["ts"] + h[0]["dur"]),
              mode + ": flow %s outside call %s" % (flows, c))


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    for stop in (False, True):
        doc = run(sys.argv[1], stop)
        if doc is not None:
            check_trace(doc, "rk_trace_stop" if stop else "at exit")
    if failures:
        print("%d check(s) FAILED" % len(failures))
        return 1
    print("trace checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
