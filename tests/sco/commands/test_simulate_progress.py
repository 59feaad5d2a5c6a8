"""The progress a long replay prints on stderr: the seconds so far and an estimate of those left."""

from __future__ import annotations

import pytest

from sco.commands.simulate import progress_bar, time_left


@pytest.mark.parametrize(("seconds", "done", "said"), [
    (20.0, 0.25, ", about 60 s left"), (600.0, 0.5, ", about 10 min left"), (10.0, 0.0, ""), (10.0, 1.0, ""),
    (60.0, 0.75, ", about 20 s left")])
def test_the_time_left_is_the_time_so_far_scaled_to_the_share_not_done(seconds: float, done: float,
                                                                         said: str) -> None:
    assert time_left(seconds, done) == said


def test_a_bar_in_a_log_prints_a_line_a_quarter_with_the_estimate(capsys: pytest.CaptureFixture[str]) -> None:
    show = progress_bar("replay r1")
    for done in (0.1, 0.3, 0.4, 0.6):
        show(done)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split()[2] for line in lines] == ["0", "25", "50"]
    assert all("left" in line for line in lines)
