"""A strategy-month's record: the comparison's columns, where the saving went, and the workloads outside their own
contract — computed from the replay's outcomes, as the Dagster partition stores them."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from contracts.bakeoff import WATERFALL_POINTS, parse_strategy_month
from contracts.compiler import check_repo
from controllers.planning import Strategy
from controllers.replay.engine import WorkloadOutcome
from controllers.replay.waterfall import ITEMS
from controllers.simregion.config import RegionConfig
from sco.bakeoff.month import MonthSpec, month_record

CONTRACTS = Path(__file__).resolve().parents[3] / "deploy" / "contracts"
H = 3600


def _outcome(name: str, g: Decimal, **kw: object) -> WorkloadOutcome:
    base: dict[str, object] = {"workload": name, "tier": "T3", "units": 10, "guaranteed_rate_per_unit": g,
                               "wanted_s": 100 * H, "delivered_s": 100 * H, "reclaimable_s": 100 * H,
                               "reclaimable_cost": g * 35, "reclaimable_cost_planning": g * 35,
                               "instance_s": 100 * H}
    return WorkloadOutcome(**{**base, **kw})  # type: ignore[arg-type]


def test_the_record_carries_the_waterfall_and_the_workload_outside_its_contract_with_its_cause() -> None:
    contracts = [w.contract for w in check_repo(CONTRACTS).workloads][:2]
    a, b = contracts
    g = Decimal("0.10")
    outcomes = {a.workload: _outcome(a.workload, g),
                # 9 of 100 unit-hours redone and 40 interruptions in 100 instance-hours: outside any contract
                b.workload: _outcome(b.workload, g, wasted_s=9 * H, interruptions=40,
                                     surplus_cost_planning=Decimal("0.5"),
                                     reclaimable_cost=g * 35 + Decimal("0.5"),
                                     reclaimable_cost_planning=g * 35 + Decimal("0.5"))}
    record = month_record(MonthSpec(seed=1, strategy="price-first"), Strategy.PRICE_FIRST, outcomes, contracts, 1.0)
    points = {item: getattr(record, field) for item, field in WATERFALL_POINTS.items()}
    assert points["wasted work"] == pytest.approx(100 * 9 / 200)
    assert points["surplus and make-before-break overlap"] == pytest.approx(100 * 0.5 / 20)
    assert record.ceiling_pct - sum(points[k] for k in ITEMS) == pytest.approx(record.achieved_pts, abs=1e-6)
    assert record.workloads_outside == 1
    assert record.outside.startswith(f"FAIL  {b.workload}:") and a.workload not in record.outside
    # what the partition prints is what the asset parses back, the new columns included
    assert parse_strategy_month(record.model_dump_json()) == record


def test_a_record_written_before_the_waterfall_was_stored_still_parses_with_zero_bars() -> None:
    old = ('{"seed": 1, "strategy": "price-first", "days": 30, "warmup_days": 7, "interruptions_pct_h": 1.7, '
           '"interruptions": 900, "wasted_pct": 0.5, "shortfall_pct": 0.01, "shortfall_wait_pct": 0, '
           '"net_pct": 39, "net_planning_pct": 42, "ceiling_pct": 56, "worst_step_pct": 50, "seconds": 1200}')
    record = parse_strategy_month(old)
    assert record.floor_pts == 0.0 and record.workloads_outside == 0 and record.outside == ""


def test_the_month_replays_the_region_sco_simulate_and_the_comparison_bench_replay() -> None:
    # the bake-off once recorded its regions with no price–demand relation, unlike every other replay
    assert MonthSpec(seed=1, strategy="price-first").price_demand == RegionConfig(seed=1).price_demand
