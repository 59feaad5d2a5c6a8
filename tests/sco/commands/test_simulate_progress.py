"""The progress a long replay prints on stderr: the seconds so far and an estimate of those left."""

from __future__ import annotations

import pytest

from sco.commands.simulate import Pace, progress_bar


def _from_the_start() -> Pace:
    """A pace whose first report came at the start: the time so far scaled to the share not done."""
    pace = Pace()
    pace(0.0, 0.0)
    return pace


@pytest.mark.parametrize(("seconds", "done", "said"), [
    (20.0, 0.25, ", about 60 s left"), (600.0, 0.5, ", about 10 min left"), (10.0, 0.0, ""), (10.0, 1.0, ""),
    (60.0, 0.75, ", about 20 s left")])
def test_the_time_left_is_the_time_so_far_scaled_to_the_share_not_done(seconds: float, done: float,
                                                                         said: str) -> None:
    assert _from_the_start()(seconds, done) == said


def test_a_bar_in_a_log_prints_a_line_a_quarter_with_the_estimate(capsys: pytest.CaptureFixture[str]) -> None:
    show = progress_bar("replay r1")
    for done in (0.1, 0.3, 0.4, 0.6):
        show(done)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split()[2] for line in lines] == ["0", "25", "50"]
    assert "left" not in lines[0] and all("left" in line for line in lines[1:])   # a pace needs two reports


def test_the_pace_is_measured_from_the_first_report_so_set_up_before_it_is_not_scaled_up() -> None:
    """100 s of set-up and warm-up before the first report at 1 %, then 10 s a per cent: at 51 %, 490 s are
    left. Scaling the whole 600 s said 576; the pace since the first report says the 490."""
    pace = Pace()
    assert pace(100.0, 0.01) == ""
    assert pace(600.0, 0.51) == ", about 8 min left" and 490 / 60 < 8.5
    assert _from_the_start()(600.0, 0.51) == ", about 10 min left"
    assert pace(1090.0, 1.0) == ""


def test_the_pace_says_nothing_until_a_share_more_than_the_first_is_done() -> None:
    pace = Pace()
    pace(5.0, 0.2)
    assert pace(9.0, 0.2) == "" and pace(10.0, 0.3) == ", about 35 s left"
