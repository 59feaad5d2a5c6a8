"""`sco controller watch-exclusions` refuses a nonsensical wave gap in one line."""

from __future__ import annotations

from tests.support.cli import sco


def test_a_wave_gap_of_zero_is_refused_in_one_line() -> None:
    result = sco("controller", "watch-exclusions", "--wave-gap-s", "0")
    assert result.returncode == 2 and "--wave-gap-s must be above 0, got 0.0" in result.stderr
    assert "Traceback" not in result.stderr
