#!/usr/bin/env bash
# Runs a command, passing its output through as it comes; whenever the command has printed nothing for 10 s, prints
# a line saying what is still working and for how long, so that no make target is silent for more than 15 s.
# Usage: scripts/heartbeat.sh LABEL COMMAND [ARG...]   (exits with the command's status; HEARTBEAT_S: the silence
# before a line, 10 s)
set -uo pipefail
quiet=${HEARTBEAT_S:-10}
label=$1
shift
start=$SECONDS
export PYTHONUNBUFFERED=1  # a Python tool writes as it goes even into this pipe
"$@" 2>&1 | {
  mid_line=false
  while :; do
    # one character at a time: pytest's progress dots come without a newline
    if IFS= read -r -d '' -N 1 -t "$quiet" ch; then
      printf '%s' "$ch"
      if [[ $ch == $'\n' ]]; then mid_line=false; else mid_line=true; fi
    elif (($? > 128)); then
      if $mid_line; then printf '\n'; mid_line=false; fi
      printf '%s: still working (%d s)\n' "$label" $((SECONDS - start))
    else
      break
    fi
  done
}
exit "${PIPESTATUS[0]}"
