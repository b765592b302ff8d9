"""check_devices_json.py RK - checks `RK devices --json`.

The output must parse as JSON (the same parser as `python3 -m json.tool`) and
describe every backend kind in order, with cpu available and cuda not (this
build has only the cpu backend). Then RK_BACKEND is set to a value full of
characters JSON must escape (quote, backslash, tab, newline, a control
character, a byte that is not UTF-8); rk echoes it back in "rk_backend_env"
and "auto_reason", so the output only parses if the escaping is right.
"""
import json
import os
import subprocess
import sys

KINDS = ["cpu", "cuda", "metal", "webgpu", "opencl"]


def devices_json(rk, rk_backend):
    env = dict(os.environb)
    env.pop(b"RK_BACKEND", None)
    if rk_backend is not None:
        env[b"RK_BACKEND"] = rk_backend
    run = subprocess.run([rk, "devices", "--json"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if run.returncode != 0:
        sys.exit("rk devices --json exited %d:\n%s" %
                 (run.returncode, run.stderr.decode(errors="replace")))
    try:
        # The bytes must be UTF-8, and the text JSON.
        return json.loads(run.stdout.decode("utf-8"))
    except ValueError as e:
        sys.exit("not valid JSON (%s):\n%s" %
                 (e, run.stdout.decode(errors="replace")))


def check(cond, what, doc):
    if not cond:
        sys.exit("FAILED: %s\n%s" % (what, json.dumps(doc, indent=2)))


def main():
    rk = sys.argv[1]

    doc = devices_json(rk, None)
    backends = doc.get("backends")
    check(isinstance(backends, list) and
          [b.get("name") for b in backends] == KINDS,
          "backends are listed as %s" % KINDS, doc)
    cpu, cuda = backends[0], backends[1]
    check(cpu.get("available") is True and cpu.get("reason") is None,
          'cpu has "available": true and "reason": null', doc)
    check(len(cpu.get("devices", [])) >= 1, "cpu has a device", doc)
    dev = cpu["devices"][0]
    check(dev.get("index") == 0 and isinstance(dev.get("name"), str) and
          dev.get("compute_units", 0) >= 1 and
          dev.get("max_threads_per_block", 0) >= 1 and
          isinstance(dev.get("memory_bytes"), int) and
          isinstance(dev.get("shared_mem_per_block"), int) and
          isinstance(dev.get("caps"), list),
          "cpu device 0 has its fields", doc)
    check(cuda.get("available") is False and
          "cuda" in (cuda.get("reason") or "") and cuda.get("devices") == [],
          'cuda has "available": false, a reason naming cuda, no devices',
          doc)
    available = [b["name"] for b in backends if b.get("available")]
    check(doc.get("auto") in available and doc.get("auto_reason") is None and
          doc.get("rk_backend_env") is None,
          "auto names an available backend; no auto_reason, no RK_BACKEND",
          doc)

    weird = b'no"such\\backend\ttab\nline\x01ctl\xffbyte'
    doc = devices_json(rk, weird)
    check(doc.get("auto") is None, 'a bad RK_BACKEND gives "auto": null', doc)
    decoded = weird.decode("utf-8", errors="replace")  # \xff -> U+FFFD
    check(doc.get("rk_backend_env") == decoded,
          "rk_backend_env round-trips RK_BACKEND", doc)
    check(decoded in (doc.get("auto_reason") or ""),
          "auto_reason quotes RK_BACKEND", doc)
    print("rk devices --json: valid, and escapes correctly")


main()
