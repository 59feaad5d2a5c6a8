"""One strategy's figures beside its summary, computed once for the bake-off's record and the comparison bench: the
ceiling the floors allow (floors at no saving, the rest at the planning rate's discount), the share of the shortfall
on workloads that wait, the most short workload and the workloads outside their own contract."""

from __future__ import annotations

from decimal import Decimal

import pytest

from contracts.schema import FallbackPolicy
from controllers.planning import Strategy
from controllers.replay.engine import WorkloadOutcome
from controllers.replay.figures import run_figures
from controllers.simregion.economics import PLANNING_RATE_SHARE
from testkit.builders import contract

H = 3600
G = Decimal("0.10")


def _outcome(name: str, **kw: object) -> WorkloadOutcome:
    base: dict[str, object] = {"workload": name, "tier": "T3", "units": 10, "guaranteed_rate_per_unit": G,
                               "wanted_s": 100 * H, "delivered_s": 100 * H, "reclaimable_s": 100 * H,
                               "reclaimable_cost": G * 35, "reclaimable_cost_planning": G * 35, "instance_s": 100 * H}
    return WorkloadOutcome(**{**base, **kw})  # type: ignore[arg-type]


def test_the_ceiling_the_wait_share_the_worst_and_the_workloads_outside_are_computed_from_the_outcomes() -> None:
    waits, floored = contract("waits", "T3"), contract("floored", "T4")   # requeue; a 30 % floor and fallback
    assert (waits.floor_pct, floored.floor_pct) == (0, 30) and waits.fallback_policy is FallbackPolicy.NONE
    assert floored.fallback_policy is not FallbackPolicy.NONE
    outcomes = {"waits": _outcome("waits", shortfall_s=3 * H, delivered_s=97 * H, reclaimable_s=97 * H),
                "floored": _outcome("floored", shortfall_s=1 * H, delivered_s=99 * H, reclaimable_s=49 * H,
                                    wasted_s=20 * H, interruptions=40)}
    f = run_figures(Strategy.PRICE_FIRST, outcomes, [waits, floored])
    # equal value wanted by both: the floored 30 % earns nothing, the rest the planning rate's discount
    assert f.ceiling_pct == pytest.approx(float((1 + Decimal("0.7")) / 2 * (1 - PLANNING_RATE_SHARE) * 100))
    assert f.shortfall_wait_pct == pytest.approx(75.0)
    assert f.worst_workload.startswith("waits short 3.00 %")
    assert [v.workload for v in f.outside] == ["floored"]   # 40 interruptions in 100 h, 20 h of its work redone
    assert f.summary.interruptions == 40


def test_nothing_wanted_gives_no_worst_workload_and_no_ceiling() -> None:
    f = run_figures(Strategy.PRICE_FIRST, {"idle": _outcome("idle", wanted_s=0)}, [contract("idle", "T3")])
    assert (f.worst_workload, f.ceiling_pct, f.shortfall_wait_pct, f.outside) == ("", 0.0, 0.0, [])
