#!/bin/sh
# check_json.sh BENCH [ARG...] - the benchmarks' smoke tests: runs
# `BENCH ARG... --json` and checks that it succeeded and that its stdout is
# one valid JSON object naming the benchmark (with python3; without it only
# the exit status counts). Exits with the benchmark's status when that is
# not 0 (77: skipped), 1 when the JSON is invalid.
out=$(mktemp "${TMPDIR:-/tmp}/rk-bench-json.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT
"$@" --json >"$out"
rc=$?
[ "$rc" -eq 0 ] || exit "$rc"
command -v python3 >/dev/null 2>&1 || exit 0
python3 - "$out" "$1" <<'PY'
import json, sys
path, bench = sys.argv[1], sys.argv[2]
try:
    with open(path) as f:
        doc = json.load(f)
except ValueError as e:
    sys.exit("%s --json: not valid JSON: %s" % (bench, e))
if not isinstance(doc, dict) or not isinstance(doc.get("benchmark"), str):
    sys.exit("%s --json: no \"benchmark\" name in %r" % (bench, doc)[:300])
print("%s --json: valid JSON, %d top-level keys" % (doc["benchmark"],
                                                     len(doc)))
PY
