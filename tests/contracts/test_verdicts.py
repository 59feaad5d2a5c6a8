"""Per-workload verdicts against the workload's own contract (issue 36)."""

from __future__ import annotations

import pytest

from contracts.verdicts import verdict


@pytest.mark.parametrize(("kw", "passed", "in_cause"), [
    ({"interruptions": 4, "instance_hours": 100.0, "tolerance_pct_h": 5.0, "wasted_pct": 1.0}, True, ""),
    ({"interruptions": 6, "instance_hours": 100.0, "tolerance_pct_h": 5.0, "wasted_pct": 1.0}, False,
     "6 reclaim(s) over 100.0 instance-hours where the tolerance allows 5.0"),
    ({"interruptions": 1, "instance_hours": 10.0, "tolerance_pct_h": 5.0, "wasted_pct": 0.0}, False,
     "too few hours to judge"),
    ({"interruptions": 30, "instance_hours": 100.0, "tolerance_pct_h": 5.0, "wasted_pct": 0.0,
      "worst_step_units": 12, "claim_units": 40}, False, "took 12 of its 40 units (30 %: a correlated wave"),
    ({"interruptions": 1, "instance_hours": 100.0, "tolerance_pct_h": 5.0, "wasted_pct": 4.5, "no_notice": 1},
     False, "1.5× the budget"),
])
def test_a_workload_passes_within_its_tolerance_and_budget_and_a_failure_names_its_cause(
        kw: dict[str, object], passed: bool, in_cause: str) -> None:
    v = verdict("w", **kw)  # type: ignore[arg-type]
    assert v.passed is passed and in_cause in v.cause and (v.cause == "") is passed
    assert v.line().startswith("PASS" if passed else "FAIL")
