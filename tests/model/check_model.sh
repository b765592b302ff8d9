#!/bin/sh
# check_model.sh - checks one configuration of a Promela model with spin,
# exhaustively, and judges the result.
#
#   check_model.sh [--expect pass|assert|deadlock] [--unreached-ok REGEX]
#                  [--depth N] [--hash W] MODEL.pml [-DNAME[=VALUE]...]
#
# It generates the verifier (spin -a), compiles it with $CC (default cc) for
# safety properties (assertions and invalid end states, i.e. deadlocks) with
# a full, not bitstate, search, runs it, and prints the states explored.
#
#   --expect pass      (default) no error, and the search was complete: not
#                      cut off by the depth limit or by memory. Also every
#                      statement of the model was reached (a statement never
#                      reached means a check that proves nothing), except
#                      the ones whose "unreached" line matches
#                      --unreached-ok (an extended regular expression).
#   --expect assert    a negative control: spin must find an assertion
#   --expect deadlock  violation (resp. an invalid end state); the test fails
#                      when it does not. The counter-example is printed.
#   --depth N          the verifier's depth limit, -m (default 100000).
#   --hash W           hash table of 2^W slots, -w (default 22).
#
# Exit status: 0 as expected, 1 not, 77 skipped (no spin or no C compiler).
set -u

expect=pass
unreached_ok=
depth=100000
hash=22
while [ $# -gt 0 ]; do
  case $1 in
    --expect) expect=$2; shift 2 ;;
    --unreached-ok) unreached_ok=$2; shift 2 ;;
    --depth) depth=$2; shift 2 ;;
    --hash) hash=$2; shift 2 ;;
    --) shift; break ;;
    -*) echo "check_model.sh: unknown option '$1'" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 1 ]; then
  echo "usage: check_model.sh [options] MODEL.pml [-DNAME[=VALUE]...]" >&2
  exit 2
fi
case $expect in
  pass | assert | deadlock) ;;
  *) echo "check_model.sh: --expect pass|assert|deadlock, not '$expect'" >&2
     exit 2 ;;
esac
model=$1
shift
name=$(basename "$model")
[ $# -eq 0 ] || name="$name $*"

if ! command -v spin >/dev/null 2>&1; then
  echo "spin not found (the model checker; Debian package 'spin', which"
  echo "scripts/deps.sh installs): skipping $name"
  exit 77
fi
CC=${CC:-cc}
if ! command -v "$CC" >/dev/null 2>&1; then
  echo "no C compiler ('$CC') to build spin's verifier: skipping $name"
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rk-model.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cp "$model" "$tmp/model.pml" || exit 1
cd "$tmp" || exit 1

fail() {
  echo "FAILED: $name: $*"
  exit 1
}

if ! spin -a "$@" model.pml >spin.log 2>&1; then
  cat spin.log
  fail "spin -a could not generate the verifier"
fi
# SAFETY: assertions and invalid end states, no cycle detection. No BITSTATE
# and no hash compaction: every state is stored whole, the search is
# exhaustive. MEMLIM (MB) stops a configuration grown too big for CI; that
# shows up as an incomplete search below.
if ! "$CC" -O2 -DSAFETY -DVECTORSZ=512 -DMEMLIM=2048 -o pan pan.c \
     >cc.log 2>&1; then
  cat cc.log
  fail "could not compile the verifier (pan.c)"
fi
./pan -m"$depth" -w"$hash" >pan.out 2>&1
pan_rc=$?

errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' pan.out | tail -n 1)
states=$(awk '/states, stored/ { print $1 }' pan.out | tail -n 1)
reached=$(sed -n 's/.*depth reached \([0-9][0-9]*\).*/\1/p' pan.out |
          tail -n 1)
seconds=$(sed -n 's/^pan: elapsed time \([0-9.e+-]*\).*/\1/p' pan.out |
          tail -n 1)
summary="${states:-?} states, depth ${reached:-?}, ${seconds:-?} s"

if [ -z "$errors" ]; then
  cat pan.out
  fail "the verifier did not report a result (exit status $pan_rc)"
fi

case $expect in
  pass)
    if [ "$errors" -ne 0 ]; then
      cat pan.out
      echo "---- counter-example (spin -t -p) ----"
      spin -t -p -g -l "$@" model.pml 2>&1 | tail -n 80
      fail "$errors error(s)"
    fi
    # An incomplete search proves nothing.
    if ! grep -q '^Full statespace search' pan.out; then
      cat pan.out
      fail "not a full state-space search"
    fi
    if grep -q 'max search depth too small' pan.out; then
      cat pan.out
      fail "the depth limit cut the search (raise --depth)"
    fi
    if grep -Eqi 'out of memory|MEMLIM|search not completed' pan.out; then
      cat pan.out
      fail "the search ran out of memory before it was complete"
    fi
    # Statements never reached: lines like "model.pml:181, state 34, ...".
    unreached=$(sed -n '/^unreached in /,$p' pan.out |
                grep '^[[:space:]]*model\.pml:[0-9]')
    if [ -n "$unreached_ok" ] && [ -n "$unreached" ]; then
      unreached=$(printf '%s\n' "$unreached" | grep -Ev -- "$unreached_ok")
    fi
    if [ -n "$unreached" ]; then
      sed -n '/^unreached in /,$p' pan.out
      fail "statements never reached (a vacuous check?)"
    fi
    echo "ok: $name: $summary, no errors, exhaustive"
    ;;
  assert | deadlock)
    if [ "$expect" = assert ]; then
      what='assertion violated'
    else
      what='invalid end state'
    fi
    if [ "$errors" -eq 0 ]; then
      cat pan.out
      fail "negative control: spin found no error, expected: $what"
    fi
    if ! grep -q "^pan:1: $what" pan.out; then
      cat pan.out
      fail "negative control: expected '$what', spin found another error"
    fi
    echo "ok: $name: spin rejects it as it should:"
    grep '^pan:1:' pan.out
    echo "---- end of the counter-example (spin -t) ----"
    spin -t -g "$@" model.pml 2>&1 | tail -n 30
    ;;
esac
exit 0
