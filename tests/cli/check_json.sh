#!/bin/sh
# check_json.sh SCENARIO RK [ARG...] - runs check_json.py with python3, or
# skips (exit 77) where there is no python3.
if ! command -v python3 >/dev/null 2>&1; then
  echo "python3 not found; skipping the JSON check"
  exit 77
fi
exec python3 "$(dirname "$0")/check_json.py" "$@"
