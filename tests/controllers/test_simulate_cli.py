"""`sco simulate` as a user runs it: bad input is refused in one line; a short compare run prints the five
strategies side by side on the same trace and says PASS or FAIL against each target."""

from __future__ import annotations

import pytest

from tests.support.cli import sco


@pytest.mark.parametrize(("args", "needle"), [(["--days", "0"], "--days must be between 0 and 400, got 0"),
                                              (["--units", "0"], "--units must be at least 1, got 0"),
                                              (["--start", "yesterday"], "--start must be YYYY-MM-DD"),
                                              (["--rank-latency-min", "-1"],
                                               "--rank-latency-min must be between 0 and 60 minutes, got -1")])
def test_bad_input_is_refused_in_one_line(args: list[str], needle: str) -> None:
    result = sco("simulate", *args)
    assert result.returncode == 2 and needle in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow  # a few seconds of CPU: make test runs it, make test-fast does not
def test_a_short_comparison_prints_all_five_strategies_on_one_trace() -> None:
    result = sco("simulate", "--days", "0.5", "--warmup-days", "0.5", "--strategy", "compare", "--units", "16",
                 "--engine", "replay")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("strategy"))
    rows = [line.split()[:2] for line in lines[header + 2: header + 7]]
    assert rows == [["ours:", "expected-cost"], ["depth-first"], ["price-first"], ["capacity-optimised"],
                    ["single-cheapest"]] or [r[0] for r in rows] == ["ours:", "depth-first", "price-first",
                                                                      "capacity-optimised", "single-cheapest"]
    assert "rate-card saving" in result.stdout and "reclaim waves" in result.stderr
    verdicts = [line for line in lines if line.startswith(("PASS  ", "FAIL  "))]
    assert [v.split(":")[0][6:] for v in verdicts] == [
        "shortfall ≤ 0.1 % of capacity-hours", "wasted work ≤ 3 % of reclaimable hours",
        "net saving ≥ 55 % (planning rates)", "interruptions/h below price-first", "worst 5-min loss below price-first",
        "interruptions/h below single-cheapest", "worst 5-min loss below single-cheapest"]
    assert "\r" not in result.stderr  # progress is one line a quarter when stderr is not a terminal


@pytest.mark.services  # starts an embedded PostgreSQL (in the sco process)
@pytest.mark.slow
def test_the_controller_engine_runs_the_production_controller_and_says_what_it_approximates() -> None:
    import re

    result = sco("simulate", "--days", "0.02", "--warmup-days", "0.1",  # the default engine: the controller
                 "--strategy", "depth-first", "--units", "8", "--rank-latency-min", "2")
    assert result.returncode == 0, result.stderr
    assert "the production controller, a pass a virtual minute: about" in result.stderr
    assert "Engine: the production controller. Approximations:" in result.stdout
    assert "no agent runs" in result.stdout and "passes every 60 s of virtual time" in result.stdout
    assert "ranking latency: 2 min from a ranking's inputs to its being in force" in result.stdout
    placed = re.search(r"^  depth-first: placed (\d+), .* breaker-tripped (\d+)", result.stdout, re.MULTILINE)
    assert placed is not None and int(placed.group(1)) > 0
    assert re.search(r"^depth-first +\d+", result.stdout, re.MULTILINE)  # a baseline now: ours is expected-cost


@pytest.mark.parametrize(("start", "hour"), [("2026-10-01", 0), ("2026-10-01T12:00", 12)])
def test_the_start_may_be_a_day_or_a_time_of_day_so_a_short_window_can_be_the_busy_afternoon(
        start: str, hour: int) -> None:
    import argparse

    from sco.commands.simulate import _checked_start

    args = argparse.Namespace(days=0.25, warmup_days=7, jobs=1, units=40, start=start, rank_latency_min=0.0)
    assert (_checked_start(args).day, _checked_start(args).hour) == (1, hour)
