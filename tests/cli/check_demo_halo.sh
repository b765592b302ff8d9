#!/bin/bash
# check_demo_halo.sh RK BACKEND - `rk demo halo --quick --json` on BACKEND
# must match its reference with halos forwarded by the host; skips (77)
# when the backend does not open here.
rk=$1
backend=$2
out=$("$rk" demo halo --quick --json --backend "$backend" 2>&1)
rc=$?
if [ $rc -ne 0 ] && printf '%s\n' "$out" | grep -q 'opening the backend'; then
  echo "skipped: $backend does not open here: $out"
  exit 77
fi
printf '%s\n' "$out"
[ $rc -eq 0 ] || { echo "FAILED: exit status $rc"; exit 1; }
printf '%s\n' "$out" |
  grep -Eq '"k2k_path":"host-forwarded",.*"send_errors":0,"matches_reference":true\}$' ||
  { echo "FAILED: no match with the reference over host-forwarded halos"; exit 1; }
echo "ok: rk demo halo on $backend"
