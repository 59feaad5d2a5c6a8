#!/usr/bin/env bash
# Brings up the system test beds (deploy/testbed/*/up) when SCO_TESTBED is set (CI sets it to "required").
# Each test bed's own script is idempotent; tests that need one are marked `testbed`.
set -euo pipefail
mode=${SCO_TESTBED:-}
[ -n "$mode" ] || { echo "testbeds: SCO_TESTBED unset, system test beds are skipped (CI sets SCO_TESTBED=required)"; exit 0; }
cd "$(dirname "$0")/.."
shopt -s nullglob
for up in deploy/testbed/*/up; do
  echo "testbeds: $up"
  if ! "$up"; then
    if [ "$mode" = required ]; then echo "testbeds: $up failed and SCO_TESTBED=required"; exit 1; fi
    echo "testbeds: $up failed; its tests will be skipped"
  fi
done
