#!/usr/bin/env bash
# check_cost.sh RK SCENARIO - checks of `rk select` and `rk calibrate` that
# need files, links, JSON parsing or counting, which expect.sh cannot do:
#
#   select_overflow    rates of 1e-300 from RK_COST_* variables (valid, so
#                      applied) make predicted times overflow: --json still
#                      parses (python3), with null for those times, and
#                      the text shows no nan or inf
#   calibrate_link     --output LINK (a symbolic link to a profile):
#                      the target gets the new profile (keeping its mode),
#                      the link stays, and --json parses even with
#                      overflowing times (null); rk select
#                      then reads the profile through RK_COST_PROFILE=LINK
#   calibrate_refused  --output naming a FIFO, a directory, a dangling link
#                      or (as root) a device node: exit 1 with a message,
#                      before measuring, and the thing is left as it was
#   stale_fingerprint  a profile whose fingerprint is this machine's with
#                      one more digit: the message shows both, different
#   unknown_env        RK_COST_ variables rk does not know: one warning on
#                      stderr naming them and the known ones
#
# Exits 0 when every check holds, 77 where python3 is missing for a JSON
# scenario; otherwise prints what failed and exits 1.
set -u
if [ $# -ne 2 ]; then
  echo "usage: check_cost.sh RK SCENARIO" >&2
  exit 1
fi
rk=$1
scenario=$2

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
# mode_of FILE: its permission bits in octal ("640"), with GNU stat or
# (macOS) BSD stat.
mode_of() { stat -c %a "$1" 2>/dev/null || stat -f %Lp "$1"; }

fail() {
  echo "FAILED: $*"
  failed=1
}

# Runs rk with stdout and stderr in $tmp/out and $tmp/err; sets rc.
run() {
  "$rk" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}

show() {
  echo "--- stdout"
  cat "$tmp/out"
  echo "--- stderr"
  cat "$tmp/err"
}

need_python() {
  if ! command -v python3 >/dev/null 2>&1; then
    echo "python3 not found; skipping $scenario"
    exit 77
  fi
}

# json_check FILE PYTHON-EXPRESSION: FILE parses as JSON, and the
# expression (on `d`, the parsed document) is true.
json_check() {
  python3 -c '
import json, sys
with open(sys.argv[1]) as f:
    d = json.load(f)
if not eval("(" + sys.argv[2] + ")"):
    sys.exit("does not hold: " + sys.argv[2])
' "$1" "$2" || fail "JSON check of $1: $2"
}

# tiny_rates [RATE]: element-wise FLOP/s so small (default 1e-300) that
# the times of large operations overflow a double.
tiny_rates() {
  export RK_COST_SCALAR_ELEMENTWISE_FLOPS=${1:-1e-300}
  export RK_COST_SIMD_ELEMENTWISE_FLOPS=${1:-1e-300}
}

case $scenario in
  select_overflow)
    need_python
    tiny_rates
    export RK_COST_PROFILE=$tmp/none.profile
    run select add 1000000000 --json
    [ $rc -eq 0 ] || fail "select --json: exit $rc"
    json_check "$tmp/out" \
      'd["candidates"][0]["target"] == "scalar" and
       d["candidates"][0]["total_s"] is None and
       d["candidates"][0]["compute_s"] is None and
       d["candidates"][0]["launch_s"] > 0 and
       d["profile"]["env_overrides"] >= 1'
    grep -Eqi 'nan|inf' "$tmp/out" && fail "JSON has nan or inf"
    [ $failed -eq 0 ] || show
    # Scalar alone overflows, and all of them do: no nan, no inf in text.
    for only in scalar all; do
      if [ $only = scalar ]; then unset RK_COST_SIMD_ELEMENTWISE_FLOPS; fi
      run select add 1000000000
      [ $rc -eq 0 ] || fail "select ($only): exit $rc"
      grep -Eqi 'nan|inf' "$tmp/out" && fail "text ($only) has nan or inf"
      grep -Eq '^scalar +overflow ' "$tmp/out" ||
        fail "text ($only): no overflow shown for scalar"
      grep -Eq '^choice: ' "$tmp/out" || fail "text ($only): no choice"
      [ $failed -eq 0 ] || show
      tiny_rates
    done
    ;;

  calibrate_link)
    need_python
    mkdir "$tmp/real"
    printf 'old\n' >"$tmp/real/target.profile"
    chmod 640 "$tmp/real/target.profile"
    ln -s real/target.profile "$tmp/link.profile"
    # 1e6 FLOP (the summary's add n=1000000) at 1e-305 FLOP/s overflows.
    tiny_rates 1e-305
    run calibrate --quick --json --output "$tmp/link.profile"
    [ $rc -eq 0 ] || fail "calibrate: exit $rc"
    json_check "$tmp/out" \
      'd["profile"].endswith("link.profile") and
       d["predictions"][1]["times"]["scalar"] is None'
    grep -Eqi 'nan|inf' "$tmp/out" && fail "JSON has nan or inf"
    [ -L "$tmp/link.profile" ] || fail "the link was replaced"
    head -n 1 "$tmp/real/target.profile" | grep -q '^# rk cost profile' ||
      fail "the link's target was not written"
    [ "$(mode_of "$tmp/real/target.profile")" = 640 ] ||
      fail "the target's mode changed"
    [ "$(ls -A "$tmp/real")" = target.profile ] ||
      fail "files left in $tmp/real: $(ls -A "$tmp/real")"
    [ $failed -eq 0 ] || show
    unset RK_COST_SCALAR_ELEMENTWISE_FLOPS RK_COST_SIMD_ELEMENTWISE_FLOPS
    RK_COST_PROFILE=$tmp/link.profile run select add 1000
    [ $rc -eq 0 ] || fail "select: exit $rc"
    grep -Eq "^profile +$tmp/link\\.profile\$" "$tmp/out" ||
      fail "select did not read the profile through the link"
    [ $failed -eq 0 ] || show
    ;;

  calibrate_refused)
    mkfifo "$tmp/fifo"
    mkdir "$tmp/dir"
    ln -s absent.profile "$tmp/dangling"
    # refused PATH MESSAGE-RE TEST-FLAG: exit 1, the message, no progress
    # (nothing measured), and PATH still passes `test TEST-FLAG`.
    refused() {
      run calibrate --quick --output "$1"
      [ $rc -eq 1 ] || fail "$1: exit $rc, expected 1"
      grep -Eq "^rk calibrate: .*cannot write '$1': $2" "$tmp/err" ||
        fail "$1: no message matching: $2"
      grep -q '%\]' "$tmp/err" && fail "$1: measured before refusing"
      test "$3" "$1" || fail "$1 was replaced"
      [ $failed -eq 0 ] || show
    }
    refused "$tmp/fifo" "it is a FIFO, not a regular file" -p
    refused "$tmp/dir" "it is a directory" -d
    refused "$tmp/dangling" "it is a symbolic link to 'absent\\.profile', which does not exist" -L
    [ -e "$tmp/absent.profile" ] && fail "the dangling link's target created"
    # A device node like /dev/full; only root can make one.
    if mknod "$tmp/full" c 1 7 2>/dev/null; then
      refused "$tmp/full" "it is a character device, not a regular file" -c
    else
      echo "note: not root; no device node checked"
    fi
    ;;

  stale_fingerprint)
    # This machine's fingerprint names its default profile.
    unset RK_COST_PROFILE
    run select add 1 --json
    fp=$(sed -n 's/.*"path":"[^"]*\/\([0-9a-f]\{32\}\)\.profile".*/\1/p' \
      "$tmp/out")
    if [ ${#fp} -ne 32 ]; then
      fail "no fingerprint in the default profile path"
      show
      exit 1
    fi
    printf 'rk-cost-profile 1\nfingerprint %s7\nend\n' "$fp" >"$tmp/p.profile"
    run select add 1 --profile "$tmp/p.profile"
    line=$(grep '^profile ' "$tmp/out")
    case $line in
      *"is stale: it was measured on another machine or hardware (fingerprint '${fp}7', this machine's $fp)"*) ;;
      *) fail "message does not show both fingerprints: $line" ;;
    esac
    ;;

  unknown_env)
    export RK_COST_PROFILE=$tmp/none.profile
    export RK_COST_FOO=1 RK_COST_SIMD_MATMUL_FLOP=1e9
    run select add 10
    [ $rc -eq 0 ] || fail "exit $rc"
    [ "$(grep -c 'RK_COST_FOO' "$tmp/err")" = 1 ] ||
      fail "RK_COST_FOO not warned exactly once"
    grep -Eq "^rk select: warning: ignoring .*RK_COST_SIMD_MATMUL_FLOP[,:]" \
      "$tmp/err" || fail "RK_COST_SIMD_MATMUL_FLOP not named"
    grep -q "known: RK_COST_PROFILE, RK_COST_SOFTWARE, RK_COST_<TARGET>_<CLASS>_{LAUNCH,FLOPS,BANDWIDTH}" \
      "$tmp/err" || fail "the known variables are not named"
    grep -q 'RK_COST_FOO' "$tmp/out" && fail "the warning went to stdout"
    [ $failed -eq 0 ] || show
    ;;

  *)
    echo "check_cost.sh: unknown scenario '$scenario'" >&2
    exit 1
    ;;
esac
exit $failed
