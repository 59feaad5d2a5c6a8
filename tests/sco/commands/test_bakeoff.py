"""``sco bakeoff``: the comparison table's verdicts, the record's bounds, and bad arguments as stable codes."""

from __future__ import annotations

import json

import pytest

from contracts.bakeoff import MAX_RECORD_BYTES, parse_strategy_month
from sco.cli import main
from sco.commands.bakeoff import render_table


def _row(strategy: str, **change: object) -> dict[str, object]:
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


def test_the_model_s_waterfall_is_printed_per_strategy_with_its_biggest_bar_and_the_workloads_outside() -> None:
    bars = {"floor_pts": 9.1, "fallback_pts": 2.0, "shortfall_pts": 0.1, "wasted_work_pts": 0.4, "overlap_pts": 1.2,
            "depth_premium_pts": 0.8, "fit_pts": 0.6, "achieved_pts": 41.8}
    ours = _row("expected-cost", **bars, max_workloads_outside=1,
                outside_worst_seed="FAIL  param-search-hpc: wasted 3.20 % > 3 %; cause: requeued units\n"
                                   "FAIL  ci-runners: 6.1 %/h > 5 %/h declared")
    base = _row("price-first", **{**bars, "overlap_pts": 0.4, "fallback_pts": 11.5},
                max_workloads_outside=0, outside_worst_seed="")
    printed = render_table([ours, base])
    assert "FAIL  every workload within its own contract (worst seed: 1 outside)" in printed
    assert ("\n      FAIL  param-search-hpc: wasted 3.20 % > 3 %; cause: requeued units"
            "\n      FAIL  ci-runners") in printed
    assert "− surplus and make-before-break overlap" in printed and "= achieved net" in printed
    assert "expected-cost: the biggest bar is floor (9.1 points)" in printed
    assert "price-first: the biggest bar is fallback spend (11.5 points)" in printed


def test_a_model_built_before_the_waterfall_was_stored_prints_the_table_without_one() -> None:
    printed = render_table([_row("expected-cost"), _row("price-first")])
    assert "achieved net" not in printed and "within its own contract" not in printed
