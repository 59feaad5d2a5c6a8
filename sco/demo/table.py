"""The demo's summary, fitted to a terminal: the headline wrapped, the table's quality, target, measured and
verdict columns with long cells wrapped inside their column, a tally of the verdicts, and how each figure was
measured as notes under the table (that column alone was ~210 characters wide). Every line fits ``width`` (120
by default)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["FAIL", "HEADERS", "NOT_JUDGED", "PASS", "WIDTH", "Row", "render_summary", "tally", "verdict"]

WIDTH = 120
HEADERS = ("quality", "target", "measured", "verdict")
PASS, FAIL, NOT_JUDGED = "PASS", "FAIL", "n/a"


class Row(NamedTuple):
    """One quality row: the one-pager's quality and target, this run's figure, its verdict, how it was measured."""

    quality: str
    target: str
    measured: str
    verdict: str    # PASS, FAIL or n/a (the run has no figure the target can be judged on; ``how`` says why)
    how: str


def verdict(met: bool | None) -> str:
    """PASS when the target was met, FAIL when not, n/a when the run cannot judge it."""
    return NOT_JUDGED if met is None else PASS if met else FAIL
GAP = "  "
# which column gives way first when the table is too wide, and how narrow it may get in that round: the
# target first, then the measured figure; the quality (each row's name) only on a very narrow terminal
_SHRINK = ((1, 22), (2, 40), (0, 24), (1, 16), (2, 24), (2, 16), (1, 12), (0, 12))


_NUMBER_UNIT = re.compile(r"(\d) (s|ms|min|h|%/h|%)(?=[\s,;:.)]|$)")


def _wrap(text: str, width: int, indent: str = "", hanging: str = "") -> list[str]:
    """Wrapped lines; a number stays on the line of its unit ("1.8 s"), and pool names such as
    r1-h1-amd-g4-2xlarge-rc stay whole when they fit (no break on hyphens)."""
    glued = _NUMBER_UNIT.sub("\\1\N{NO-BREAK SPACE}\\2", text)
    lines = textwrap.wrap(glued, width, break_on_hyphens=False, initial_indent=indent,
                          subsequent_indent=hanging) or [""]
    return [line.replace("\N{NO-BREAK SPACE}", " ") for line in lines]


def _widths(cells: Sequence[Sequence[str]], width: int) -> list[int]:
    widths = [max(len(row[i]) for row in cells) for i in range(len(HEADERS))]
    room = width - len(GAP) * (len(HEADERS) - 1)
    for column, narrowest in _SHRINK:
        excess = sum(widths) - room
        if excess <= 0:
            break
        widths[column] = max(narrowest, widths[column] - excess)
    return widths


def _table(rows: Sequence[Sequence[str]], width: int) -> list[str]:
    cells = [list(HEADERS), *[list(row[:4]) for row in rows]]
    widths = _widths(cells, width)
    lines = []
    for n, row in enumerate(cells):
        wrapped = [_wrap(cell, w) for cell, w in zip(row, widths, strict=True)]
        for k in range(max(len(w) for w in wrapped)):
            parts = [(w[k] if k < len(w) else "").ljust(widths[i]) for i, w in enumerate(wrapped)]
            lines.append(GAP.join(parts).rstrip())
        if n == 0:
            lines.append(GAP.join("-" * w for w in widths))
    return lines


def tally(rows: Sequence[Sequence[str]]) -> str:
    """``11 PASS, 2 FAIL (Wasted work, Net saving), 1 n/a (…)``: the verdicts counted, the misses named."""
    parts = []
    for word in (PASS, FAIL, NOT_JUDGED):
        named = [row[0] for row in rows if row[3] == word]
        if named:
            parts.append(f"{len(named)} {word}" + ("" if word == PASS else f" ({', '.join(named)})"))
    return "Verdicts: " + ("; ".join(parts) or "none")


def render_summary(headline: str, rows: Sequence[Sequence[str]], width: int = WIDTH,
                   remarks: Sequence[str] = ()) -> str:
    """``rows`` are :class:`Row` s (quality, target, measured, verdict, how); the first line of each row starts
    with its quality. ``remarks`` are paragraphs printed under the tally."""
    notes = ["How each figure was measured:"]
    for row in rows:
        notes.extend(_wrap(f"{row[0]}: {row[4]}", width, indent="  ", hanging="      "))
    said = [line for remark in remarks for line in _wrap(remark, width)]
    return "\n".join([*_wrap(headline, width), "", *_table(rows, width), "", *_wrap(tally(rows), width), *said, "",
                      *notes])
