#!/usr/bin/env bash
# Creates .venv (Python 3.11) and installs the project with the pinned constraints.
# Usage: scripts/bootstrap-venv.sh EXTRAS   (e.g. "agent,stack,dev")
# On a fresh Debian/Ubuntu machine it installs python3-venv (as root) when venv is missing.
set -euo pipefail
extras=${1:-dev}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
step() { printf 'bootstrap: [%4d s] %s\n' "$SECONDS" "$*"; }
py=${PYTHON:-}
if [ -z "$py" ]; then
  for cand in python3.11 python3.12 python3; do
    if command -v "$cand" >/dev/null 2>&1; then py=$cand; break; fi
  done
fi
[ -n "$py" ] || { echo "bootstrap: no python3 found; install Python 3.11 (apt-get install python3)"; exit 2; }
if [ ! -x .venv/bin/python ]; then
  step "creating .venv with $py"
  if ! "$py" -m venv .venv >/dev/null 2>&1; then
    rm -rf .venv
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "bootstrap: installing python3-venv with apt-get"
      ver=$("$py" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
      # apt is quiet here for a minute or more: the heartbeat says it still works
      scripts/heartbeat.sh "bootstrap: apt-get" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq "$0" python3-venv >/dev/null' "python${ver}-venv"
      "$py" -m venv .venv
    else
      echo "bootstrap: '$py -m venv' failed; install python3-venv (sudo apt-get install python3-venv)"; exit 2
    fi
  fi
fi
# pip's own output goes to .venv/bootstrap-pip.log; here, a line every few seconds with what it is doing, and one
# every 10 s while pip prints nothing (unpacking the wheels is minutes of silence on a fresh venv)
pip_progress() {
  local line part="" n=0 shown=-10 doing="resolving" status
  while :; do
    IFS= read -r -t 10 line && status=0 || status=$?
    if ((status > 128)); then  # nothing for 10 s; a line cut by the timeout is kept and completed next time
      part+=$line
      step "still $doing"
      continue
    fi
    ((status == 0)) || [ -n "$part$line" ] || break
    line=$part$line part=""
    printf '%s\n' "$line" >>"$log"
    case $line in
      Collecting*)
        n=$((n + 1)) doing="resolving and downloading ($n package(s) so far)"
        if [ $((SECONDS - shown)) -ge 3 ]; then shown=$SECONDS; step "resolving and downloading: $n package(s) so far (${line#Collecting })"; fi ;;
      "Installing collected packages:"*)
        doing="unpacking and installing the wheels"
        step "installing $(tr -cd , <<<"$line" | wc -c | awk '{print $1 + 1}') package(s) (unpacking wheels: the longest step)" ;;
      Successfully\ installed*) step "installed" ;;
      ERROR*) printf '%s\n' "$line" >&2 ;;
    esac
    ((status == 0)) || break
  done
}

hash=$(cat pyproject.toml requirements/constraints.txt | sha256sum | cut -c1-16)
# an install of these files with every extra asked for (or more) is enough: `make demo` after `make test`
# installs nothing
installed=false
for done_stamp in .venv/.installed-"$hash"-*; do
  [ -f "$done_stamp" ] || continue
  have=",${done_stamp##*-${hash}-},"; have=${have//_/,}
  missing=false
  for want in ${extras//,/ }; do [[ $have == *",$want,"* ]] || missing=true; done
  $missing || installed=true
done
if ! $installed; then
  log=.venv/bootstrap-pip.log
  : >"$log"
  step "installing sco[$extras] into .venv (pinned by requirements/constraints.txt; pip's log: $log)"
  failed() { tail -n 30 "$log" >&2; echo "bootstrap: pip failed (whole log: $log)" >&2; exit 1; }
  .venv/bin/python -m pip install --disable-pip-version-check --upgrade "pip>=24" 2>&1 | pip_progress || failed
  step "pip is up to date; resolving sco[$extras] (a fresh venv takes a few minutes)"
  .venv/bin/python -m pip install --disable-pip-version-check --progress-bar off -c requirements/constraints.txt \
    -e ".[$extras]" 2>&1 | pip_progress || failed
  rm -f .venv/.installed-*
  touch ".venv/.installed-$hash-${extras//,/_}"
  step "done"
fi
