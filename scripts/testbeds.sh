#!/usr/bin/env bash
# Brings up the system test beds (deploy/testbed/*/up) when SCO_TESTBED is set (CI sets it to "required").
# Each test bed's own script is idempotent; tests that need one are marked `testbed`. The Slurm and Ceph beds
# live under this checkout's .sco/testbed/<name>/ on free ports (their env.json says where); OpenStack is
# machine-wide. The monitoring, cloud-init and Patroni beds only install packages (Patroni: patroni, etcd-server,
# postgresql-15; each test starts its own etcd + two-member cluster on free ports). tests/support/testbeds.py is
# the tests' one reader of those locations.
set -euo pipefail
mode=${SCO_TESTBED:-}
[ -n "$mode" ] || { echo "testbeds: SCO_TESTBED unset, system test beds are skipped (CI sets SCO_TESTBED=required)"; exit 0; }
cd "$(dirname "$0")/.."
shopt -s nullglob
for up in deploy/testbed/*/up; do
  echo "testbeds: $up"
  t0=$SECONDS
  if "$up"; then echo "testbeds: $up took $((SECONDS - t0)) s"; else
    if [ "$mode" = required ]; then echo "testbeds: $up failed and SCO_TESTBED=required"; exit 1; fi
    echo "testbeds: $up failed; its tests will be skipped"
  fi
done
