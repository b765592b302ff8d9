#!/usr/bin/env bash
# check_report.sh ROOT OUT - scripts/report.sh --draw on the canned results
# in tests/report/data (the benchmarks' --json output from one run, cut
# down): every picture must come out as a PNG of a plausible size, and an
# empty results directory must draw nothing without failing. Skips (77)
# where no Python has matplotlib.
set -uo pipefail
root=$1 out=$2
rm -rf "$out"
mkdir -p "$out/empty-results"
bash "$root/scripts/report.sh" --draw "$root/tests/report/data" "$out/img"
rc=$?
[ "$rc" -eq 0 ] || exit "$rc"
failed=0
for name in demo cost-crossover cost-regret ops-stream backend-overhead \
            actors trace-timeline; do
  f="$out/img/$name.png"
  if [ ! -f "$f" ]; then
    echo "FAILED: no $name.png"; failed=1; continue
  fi
  magic=$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')
  size=$(wc -c <"$f")
  if [ "$magic" != "89504e470d0a1a0a" ] || [ "$size" -lt 20000 ]; then
    echo "FAILED: $name.png is not a PNG of a plausible size ($size bytes)"
    failed=1
  fi
done
bash "$root/scripts/report.sh" --draw "$out/empty-results" "$out/none" \
  2>"$out/empty.log" || { echo "FAILED: empty results"; failed=1; }
if [ -n "$(ls -A "$out/none" 2>/dev/null)" ]; then
  echo "FAILED: pictures drawn from no results"; failed=1
fi
grep -q "skipped: no demo" "$out/empty.log" ||
  { echo "FAILED: report.py did not say what it skipped"; failed=1; }
[ "$failed" -eq 0 ] && echo "report pictures drawn and checked"
exit "$failed"
