#!/usr/bin/env bash
# check_cache.sh RK - `rk cache`: where the cache is, its parts' sizes, the
# entries, and clear, in a cache directory of its own. Clear removes what
# lies inside the parts' directories only: a file beside them and the
# target of a link inside them stay, and a part another user could have
# written is refused. JSON output parses (python3 when present).
set -euo pipefail

rk=$1

fail() { echo "FAIL: $*"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rk-cache-test.XXXXXX")
trap 'chmod -R u+rwx "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
export RK_CACHE_DIR=$tmp/cache
unset RK_BACKEND

out=$("$rk" cache)
grep -q "^cache  *$tmp/cache (from RK_CACHE_DIR), does not exist yet$" <<<"$out" ||
  fail "no cache yet: $out"
grep -q "^size  *0 bytes in 0 files$" <<<"$out" || fail "empty size: $out"

# A compiled kernel lands in the cpu part.
"$rk" demo saxpy --backend cpu --n 100 | grep -q '^kernel cache  *miss' ||
  fail "the first demo was not a cache miss"
out=$("$rk" cache)
grep -Eq "^  cpu +[0-9.]+ (bytes|KiB|MiB), [1-9][0-9]* files?: compiled CPU" \
  <<<"$out" || fail "cpu part: $out"
grep -Eq "^  cost +0 bytes, 0 files" <<<"$out" || fail "cost part: $out"
"$rk" cache list | grep -Eq '^cpu/[0-9a-f]+\.so +[0-9.]+ (bytes|KiB|MiB) ' ||
  fail "list: $("$rk" cache list)"

if command -v python3 >/dev/null 2>&1; then
  "$rk" cache --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
parts = {p["name"]: p for p in d["parts"]}
assert d["exists"] is True and d["refused"] is None, d
assert parts["cpu"]["files"] >= 1 and d["files"] >= parts["cpu"]["files"], d
assert d["bytes"] == sum(p["bytes"] for p in d["parts"]), d
' || fail "rk cache --json"
  "$rk" cache list --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["entries"] and all(e["path"].startswith(("cpu/", "cuda/", "cost/"))
                            and e["bytes"] >= 0 for e in d["entries"]), d
' || fail "rk cache list --json"
fi

# Beside the parts, and behind a link inside one: never removed.
echo keep >"$tmp/cache/not-rk.txt"
echo keep >"$tmp/outside.txt"
ln -s "$tmp/outside.txt" "$tmp/cache/cpu/link"
mkdir -p "$tmp/cache/cost"
chmod 700 "$tmp/cache/cost"
echo profile >"$tmp/cache/cost/0123.profile"

out=$("$rk" cache clear cpu)
grep -Eq "^cpu +removed [1-9][0-9]* files?, " <<<"$out" || fail "clear cpu: $out"
[ -z "$(ls -A "$tmp/cache/cpu")" ] || fail "cpu not empty: $(ls -A "$tmp/cache/cpu")"
[ -f "$tmp/outside.txt" ] || fail "the target of a link was removed"
[ -f "$tmp/cache/not-rk.txt" ] || fail "a file beside the parts was removed"
[ -f "$tmp/cache/cost/0123.profile" ] || fail "clear cpu removed a profile"
"$rk" demo saxpy --backend cpu --n 100 | grep -q '^kernel cache  *miss' ||
  fail "after clear, the demo was not a cache miss"

# A part group or others may write is not touched.
chmod 770 "$tmp/cache/cost"
status=0
err=$("$rk" cache clear 2>&1 >/dev/null) || status=$?
[ "$status" -eq 1 ] || fail "clear of a writable-by-group part: exit $status"
grep -q "not clearing cost: .*writable by group or others" <<<"$err" ||
  fail "refusal: $err"
[ -f "$tmp/cache/cost/0123.profile" ] || fail "a refused part was cleared"
chmod 700 "$tmp/cache/cost"
"$rk" cache clear >/dev/null || fail "clear all"
[ ! -e "$tmp/cache/cost/0123.profile" ] || fail "clear all kept the profile"
[ -f "$tmp/cache/not-rk.txt" ] || fail "clear all removed a file beside"

# Usage errors.
status=0
"$rk" cache clear gpu >/dev/null 2>&1 || status=$?
[ "$status" -eq 2 ] || fail "unknown part: exit $status"
status=0
"$rk" cache bogus >/dev/null 2>&1 || status=$?
[ "$status" -eq 2 ] || fail "unknown subcommand: exit $status"
echo "cache: passed"
