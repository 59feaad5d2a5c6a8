#!/usr/bin/env bash
# Creates .venv (Python 3.11) and installs the project with the pinned constraints.
# Usage: scripts/bootstrap-venv.sh EXTRAS   (e.g. "agent,stack,dev")
# On a fresh Debian/Ubuntu machine it installs python3-venv (as root) when venv is missing.
set -euo pipefail
extras=${1:-dev}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
py=${PYTHON:-}
if [ -z "$py" ]; then
  for cand in python3.11 python3.12 python3; do
    if command -v "$cand" >/dev/null 2>&1; then py=$cand; break; fi
  done
fi
[ -n "$py" ] || { echo "bootstrap: no python3 found; install Python 3.11 (apt-get install python3)"; exit 2; }
if [ ! -x .venv/bin/python ]; then
  if ! "$py" -m venv .venv >/dev/null 2>&1; then
    rm -rf .venv
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "bootstrap: installing python3-venv with apt-get"
      ver=$("$py" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "python${ver}-venv" python3-venv >/dev/null
      "$py" -m venv .venv
    else
      echo "bootstrap: '$py -m venv' failed; install python3-venv (sudo apt-get install python3-venv)"; exit 2
    fi
  fi
fi
stamp=".venv/.installed-$(cat pyproject.toml requirements/constraints.txt | sha256sum | cut -c1-16)-${extras//,/_}"
if [ ! -f "$stamp" ]; then
  echo "bootstrap: installing sco[$extras] into .venv (pinned by requirements/constraints.txt)"
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade "pip>=24" 
  .venv/bin/python -m pip install -q --disable-pip-version-check -c requirements/constraints.txt -e ".[$extras]"
  rm -f .venv/.installed-*
  touch "$stamp"
fi
