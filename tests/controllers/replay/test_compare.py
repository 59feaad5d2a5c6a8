"""Tracing a workload's worst 5-min step (issue 19: a worst-step loss above single-cheapest's must be explained
from the traces): the loss by hall, aggregate and pool against what the workload held there just before."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from contracts.pools import Pool, PurchaseModel
from controllers.replay import StepLoss, WorkloadOutcome, explain_step


def _pool(pid: str, hall: str, aggregate: str) -> Pool:
    return Pool(pool_id=pid, region="r1", hall=hall, aggregate=aggregate, sku_family="c", size="l", vcpu=8,
                memory_gib=32, purchase_model=PurchaseModel.RECLAIMABLE, rate_eur_h=Decimal("0.1"),
                guaranteed_rate_eur_h=Decimal("0.3"))


POOLS = {p.pool_id: p for p in (_pool("p1", "h1", "a1"), _pool("p2", "h1", "a1"), _pool("p3", "h1", "a2"),
                                _pool("p4", "h2", "a3"), _pool("p5", "h3", "a4"))}


def test_a_loss_within_the_caps_names_the_hall_and_the_aggregates_it_hit_with_their_held_shares() -> None:
    o = WorkloadOutcome("etl", "T3", 20, worst_step_loss_units=6,
                        worst_step=StepLoss(datetime(2026, 10, 3, 14, 5, tzinfo=UTC), {"p1": 3, "p3": 3},
                                            {"p1": 3, "p2": 3, "p3": 3, "p4": 6, "p5": 5}))
    text = explain_step(o, POOLS)
    assert text.splitlines()[0] == ("etl at 2026-10-03 14:05 UTC lost 6 units (30 % of its claim of 20) in 2 "
                                    "pool(s); it held 20 reclaimable units in 5 pool(s) before, 14 after")
    assert ("lost by hall: h1 6 (30 %); by aggregate: a1 3 (15 %), a2 3 (15 %); by pool: p1 3 (15 %), p3 3 (15 %)"
            in text)
    assert "held by hall: h1 9 (45 %), h2 6 (30 %), h3 5 (25 %)" in text
    assert "largest pools: p4 6 (30 %), p5 5 (25 %), p1 3 (15 %)" in text
    assert "launched since" not in text


def test_a_loss_of_instances_launched_after_the_first_loss_of_the_step_is_named() -> None:
    o = WorkloadOutcome("etl", "T3", 10, worst_step=StepLoss(datetime(2026, 10, 3, 14, 5, tzinfo=UTC),
                                                            {"p1": 2, "p4": 4}, {"p1": 2, "p4": 1}))
    assert "lost beyond what the pass before held (launched since): p4 lost 4, held 1" in explain_step(o, POOLS)


def test_a_workload_that_lost_nothing_says_so() -> None:
    assert explain_step(WorkloadOutcome("etl", "T3", 10), POOLS) == "etl: no reclaimable unit lost"
