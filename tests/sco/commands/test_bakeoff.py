"""``sco bakeoff``: the comparison table's verdicts, the record's bounds, and bad arguments as stable codes."""

from __future__ import annotations

import json

import pytest

from contracts.bakeoff import MAX_RECORD_BYTES, parse_strategy_month
from sco.cli import main
from sco.commands.bakeoff import render_table


def _row(strategy: str, **change: float) -> dict[str, object]:
    row: dict[str, object] = {"strategy": strategy, "seeds": 4, "days": 30.0, "revision": "r",
                              "interruptions_pct_h": 1.5, "max_interruptions_pct_h": 1.8, "net_planning_pct": 45.0,
                              "min_net_planning_pct": 43.0, "net_pct": 44.0, "max_shortfall_pct": 0.05,
                              "max_wasted_pct": 2.0, "worst_step_pct": 40.0, "ceiling_pct": 56.0,
                              "seeds_less_interrupted": 4}
    return {**row, **change}


def test_ours_ahead_of_price_first_on_every_target_passes_every_verdict() -> None:
    printed = render_table([_row("expected-cost"), _row("price-first", net_planning_pct=41.0,
                                                      seeds_less_interrupted=0)])
    assert "FAIL" not in printed and printed.count("PASS") == 5


@pytest.mark.parametrize(("change", "failing"), [
    ({"net_planning_pct": 43.0}, "net ≥ price-first + 3 points"),
    ({"seeds_less_interrupted": 3}, "interruptions/h below price-first on every seed (3 of 4"),
    ({"max_shortfall_pct": 0.2}, "shortfall ≤ 0.1 %"),
    ({"max_wasted_pct": 3.5}, "wasted ≤ 3 %"),
    ({"net_planning_pct": 44.0}, "mean net (planning) ≥ 45 %"),
])
def test_each_miss_is_printed_as_a_fail_line(change: dict[str, float], failing: str) -> None:
    printed = render_table([_row("expected-cost", **change), _row("price-first", net_planning_pct=40.5)])
    assert f"FAIL  {failing}" in printed


def test_a_record_is_bounded_before_it_is_parsed() -> None:
    with pytest.raises(ValueError, match="over 65,536"):
        parse_strategy_month(json.dumps({"worst_workload": "x" * MAX_RECORD_BYTES}))


def test_a_record_with_an_unknown_field_is_refused_naming_it() -> None:
    record = {"seed": 1, "strategy": "depth-first", "days": 1, "warmup_days": 1, "interruptions_pct_h": 1,
              "interruptions": 1, "wasted_pct": 0, "shortfall_pct": 0, "shortfall_wait_pct": 0, "net_pct": 1,
              "net_planning_pct": 1, "ceiling_pct": 1, "worst_step_pct": 1, "seconds": 1, "bogus": 1}
    with pytest.raises(ValueError, match="bogus"):
        parse_strategy_month(json.dumps(record))


@pytest.mark.parametrize(("argv", "code"), [
    (["--days", "0"], "BAK001 --days must be positive"),
    (["--start", "October"], "BAK002 --start must be YYYY-MM-DD"),
])
def test_bad_arguments_are_one_line_with_a_stable_code(argv: list[str], code: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bakeoff", "run", "--seed", "1", "--strategy", "depth-first", *argv]) == 2
    err = capsys.readouterr().err
    assert code in err and "Traceback" not in err
