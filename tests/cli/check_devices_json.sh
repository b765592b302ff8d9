#!/bin/sh
# check_devices_json.sh RK - runs check_devices_json.py with python3, or
# skips (exit 77) where there is no python3.
if ! command -v python3 >/dev/null 2>&1; then
  echo "python3 not found; skipping the JSON check"
  exit 77
fi
exec python3 "$(dirname "$0")/check_devices_json.py" "$@"
