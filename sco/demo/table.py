"""The demo's summary, fitted to a terminal: the headline wrapped, the table's quality, target and measured
columns with long cells wrapped inside their column, and how each figure was measured as notes under the
table (that column alone was ~210 characters wide). Every line fits ``width`` (120 by default)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

__all__ = ["HEADERS", "WIDTH", "render_summary"]

WIDTH = 120
HEADERS = ("quality", "target", "measured")
GAP = "  "
# which column gives way first when the table is too wide, and how narrow it may get in that round: the
# target first, then the measured figure; the quality (each row's name) only on a very narrow terminal
_SHRINK = ((1, 22), (2, 40), (0, 24), (2, 16), (1, 12), (0, 12))


_NUMBER_UNIT = re.compile(r"(\d) (s|ms|min|h|%)(?=[\s,;.)]|$)")


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
    cells = [list(HEADERS), *[list(row[:3]) for row in rows]]
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


def render_summary(headline: str, rows: Sequence[Sequence[str]], width: int = WIDTH) -> str:
    """``rows`` are ``[quality, target, measured, how]``; the first line of each row starts with its quality."""
    notes = ["How each figure was measured:"]
    for row in rows:
        notes.extend(_wrap(f"{row[0]}: {row[3]}", width, indent="  ", hanging="      "))
    return "\n".join([*_wrap(headline, width), "", *_table(rows, width), "", *notes])
