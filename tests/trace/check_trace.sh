#!/bin/sh
# check_trace.sh PROGRAM - runs check_trace.py with python3, or skips
# (exit 77) where there is no python3.
if ! command -v python3 >/dev/null 2>&1; then
  echo "python3 not found; skipping the trace check"
  exit 77
fi
exec python3 "$(dirname "$0")/check_trace.py" "$@"
