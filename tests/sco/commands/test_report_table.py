"""The plain-text tables the commands print: numbers right-aligned, negative ones too."""

from __future__ import annotations

from sco.commands.report import render_table


def test_numbers_negative_ones_included_are_right_aligned_and_words_left() -> None:
    lines = render_table(["item", "ours", "theirs"], [["premium", "2.0", "-0.4"], ["net", "42.5", "n/a"]]).splitlines()
    assert lines[2] == "premium   2.0    -0.4"
    assert lines[3] == "net      42.5  n/a"
