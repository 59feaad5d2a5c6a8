#!/usr/bin/env python3
"""Runs the demo as a newcomer's `make demo` runs it (stdout not a terminal) and puts what it printed into the
README, between the ``demo-capture`` markers: the first phase line, the summary and the run's facts (when, the
machine's load, the longest silence between two printed lines).

    .venv/bin/python scripts/demo-capture.py [SCO DEMO ARGUMENTS...]

Every line the demo prints is passed through as it comes. The README is rewritten only when the demo exited 0
and printed its summary; tests/sco/demo/test_readme_capture.py checks the capture's rows against the summary's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
BEGIN, END = "<!-- demo-capture:begin -->", "<!-- demo-capture:end -->"


def run(args: list[str]) -> tuple[int, list[str], float]:
    """The demo's exit status, its lines, and the longest gap between two of them (seconds)."""
    sco = Path(sys.executable).parent / "sco"
    proc = subprocess.Popen([str(sco), "demo", *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    lines, last, gap = [], time.monotonic(), 0.0
    for line in proc.stdout:
        now = time.monotonic()
        gap, last = max(gap, now - last), now
        sys.stdout.write(line)
        lines.append(line.rstrip("\n"))
    return proc.wait(), lines, gap


def capture(lines: list[str], started: datetime, wall_s: float, gap_s: float, load: float) -> str:
    """The README's block: the first phase line, then the summary up to the run directory."""
    first = next(line for line in lines if re.match(r"\[\s*\d+\.\d s\] ", line))
    summary = lines[next(n for n, line in enumerate(lines) if line.startswith("SCO demo: ")):]
    summary = summary[:next(n for n, line in enumerate(summary) if line.startswith("Run directory")) + 1]
    summary = [line.replace(f"{REPO}/", "") for line in summary]  # the clone's own paths, as a reader's would be
    facts = (f"captured by scripts/demo-capture.py on {started:%Y-%m-%d %H:%M} UTC: `sco demo` {wall_s:.0f} s, "
             f"load average {load:.1f} at the start, the longest silence between two printed lines {gap_s:.0f} s")
    return "\n".join([BEGIN, f"<!-- {facts} -->", "```text", first, "... one line per phase (docs/demo.md lists "
                      "them), and a line at least every 15 s ...", *summary, "```", END])


def main() -> int:
    started, load, t0 = datetime.now(UTC), os.getloadavg()[0], time.monotonic()
    code, lines, gap = run(sys.argv[1:])
    if code != 0 or not any(line.startswith("SCO demo: ") for line in lines):
        print(f"demo-capture: the demo exited {code} without its summary; README.md left as it was", file=sys.stderr)
        return code or 1
    text = README.read_text()
    if BEGIN not in text or END not in text:
        print(f"demo-capture: README.md has no {BEGIN} … {END} block", file=sys.stderr)
        return 2
    block = capture(lines, started, time.monotonic() - t0, gap, load)
    README.write_text(text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):])
    print(f"demo-capture: README.md updated (longest silence {gap:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
