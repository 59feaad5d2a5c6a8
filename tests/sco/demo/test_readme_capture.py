"""The README's demo capture (written by scripts/demo-capture.py from a real run) shows the summary a newcomer's
run prints: the same quality rows, in the same order, as the summary renders for a run without the Slurm test bed
(which adds its own row), each with a verdict."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from sco.demo.summary import Summary
from testkit.paths import REPO

BEGIN, END = "<!-- demo-capture:begin -->", "<!-- demo-capture:end -->"
VERDICTS = ("PASS", "FAIL", "n/a")


def _capture() -> list[str]:
    text = (REPO / "README.md").read_text()
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)].splitlines()


def _captured_rows(lines: list[str]) -> list[tuple[str, str]]:
    """(quality, verdict) of each row: a row starts at column 0 between the rule under the header and the blank
    line before the tally; its wrapped lines are indented."""
    rule = next(n for n, line in enumerate(lines) if line.startswith("------"))
    qualities = [n for n in range(rule + 1, len(lines)) if lines[n][:1].strip()]
    end = next(n for n in range(rule + 1, len(lines)) if not lines[n].strip())
    return [(re.split(r"\s{2,}", lines[n])[0], lines[n].split()[-1]) for n in qualities if n < end]


def _newcomer_summary() -> Summary:
    """The conditional rows a run without the Slurm bed prints: the ranking was timed, a drill drained nodes, real
    agents booted from the user-data."""
    summary = Summary(started=datetime.now(UTC), drilled=["i-1"], userdata_agents_max=3)
    summary.timing("pool_rankings", 12.0)
    return summary


def test_the_readme_capture_has_the_summary_s_rows_in_order_each_with_a_verdict() -> None:
    rows = _captured_rows(_capture())
    assert [quality for quality, _ in rows] == [row[0] for row in _newcomer_summary().rows()]
    assert all(verdict in VERDICTS for _, verdict in rows), rows


def test_the_readme_capture_says_how_it_was_made_and_holds_the_tally() -> None:
    lines = _capture()
    assert any(line.startswith("<!-- captured by scripts/demo-capture.py on ") for line in lines), lines[:3]
    tally = next(line for line in lines if line.startswith("Verdicts: "))
    rows = _captured_rows(lines)
    assert f"{sum(v == 'PASS' for _, v in rows)} PASS" in tally
