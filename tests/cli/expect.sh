#!/usr/bin/env bash
# expect.sh - runs a command, then checks its exit status and its output.
#
#   expect.sh [--exit N|nonzero] [--out RE]... [--err RE]... [--no-out RE]...
#             [--quiet-out] -- COMMAND [ARG]...
#
#   --exit N      the exit status it must have (default 0); "nonzero": any
#                 failure, but not a crash by signal
#   --out RE      some line of stdout must match the extended regular
#                 expression RE (grep -E); may be given several times
#   --err RE      the same for stderr
#   --no-out RE   no line of stdout may match RE; may be given several times
#   --quiet-out   stdout must be empty (usage errors go to stderr)
#
# Exits 0 when every check holds; otherwise prints the failed checks, the
# command and what it wrote, and exits 1.
set -u

want_exit=0
outs=()
errs=()
no_outs=()
quiet_out=0
while [ $# -gt 0 ]; do
  case $1 in
    --exit) want_exit=$2; shift 2 ;;
    --out) outs+=("$2"); shift 2 ;;
    --err) errs+=("$2"); shift 2 ;;
    --no-out) no_outs+=("$2"); shift 2 ;;
    --quiet-out) quiet_out=1; shift ;;
    --) shift; break ;;
    *) echo "expect.sh: unknown option '$1'" >&2; exit 1 ;;
  esac
done
if [ $# -eq 0 ]; then
  echo "expect.sh: no command after --" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$@" >"$tmp/out" 2>"$tmp/err"
got=$?

failed=0
fail() {
  echo "FAILED: $*"
  failed=1
}

if [ "$want_exit" = nonzero ]; then
  if [ "$got" -eq 0 ] || [ "$got" -gt 128 ]; then
    fail "exit status $got, expected a failure (1..128)"
  fi
elif [ "$got" -ne "$want_exit" ]; then
  fail "exit status $got, expected $want_exit"
fi
for re in ${outs[@]+"${outs[@]}"}; do
  grep -Eq -e "$re" "$tmp/out" || fail "no line of stdout matches: $re"
done
for re in ${errs[@]+"${errs[@]}"}; do
  grep -Eq -e "$re" "$tmp/err" || fail "no line of stderr matches: $re"
done
for re in ${no_outs[@]+"${no_outs[@]}"}; do
  grep -Eq -e "$re" "$tmp/out" && fail "a line of stdout matches: $re"
done
if [ "$quiet_out" -eq 1 ] && [ -s "$tmp/out" ]; then
  fail "stdout is not empty"
fi

if [ "$failed" -ne 0 ]; then
  printf 'command:'
  printf ' %q' "$@"
  printf '\n--- stdout\n'
  cat "$tmp/out"
  printf -- '--- stderr\n'
  cat "$tmp/err"
  exit 1
fi
exit 0
