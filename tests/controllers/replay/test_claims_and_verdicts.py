"""Claims held to what the region lends a shape, the planning-rate ledger, and the PASS/FAIL verdicts."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from controllers.planning import Strategy
from controllers.replay import StrategySummary, Trace, replay, size_claims, verdicts

from ..builders import contract, pool

START = datetime(2026, 11, 1, tzinfo=UTC)


def trace_with_free(free_per_pool: list[int], n: int = 4, **kw: object) -> Trace:
    pools = tuple(pool(f"p{i}", hall=f"h{i % 3 + 1}", vcpu=8) for i in range(n))
    frees = tuple((START - timedelta(hours=len(free_per_pool) - i), {p.pool_id: f for p in pools})
                  for i, f in enumerate(free_per_pool))
    return Trace(START, START + timedelta(days=1), pools, {p.pool_id: 100 for p in pools}, (), free=frees,
                 warmup=timedelta(hours=len(free_per_pool)), **kw)  # type: ignore[arg-type]


def test_a_claim_is_held_to_its_shapes_free_capacity_at_the_5th_percentile_and_refused_at_none() -> None:
    # four pools of 8 vCPU: a 4-vCPU unit fits 2 an instance, an 8-vCPU unit 1, a 16-vCPU unit none
    trace = trace_with_free([3] + [10] * 19)  # 20 warm-up rows: the lowest is the 5th percentile
    small, big, huge = (contract("T3", name=n, vcpu=v) for n, v in (("small", 4), ("big", 8), ("huge", 16)))
    sized = {s.workload: s for s in size_claims(trace, [small, big, huge], 40)}
    assert sized["small"].units == 24 and sized["small"].free_low == 24  # 4 pools × 3 free × 2 units
    assert sized["big"].units == 12 and "held to 12" in sized["big"].note
    assert sized["huge"].units == 0 and "refused" in sized["huge"].note
    assert size_claims(trace, [small], 10)[0].note == ""  # a claim within the capacity stands


def test_net_saving_under_planning_rates_prices_reclaimable_hours_at_the_catalogue_rate() -> None:
    trace = trace_with_free([100], n=8)
    card = {p.pool_id: Decimal("0.20") for p in trace.pools}  # the rate card at twice the catalogue's 0.10
    out = replay(replace(trace, rate_cards=((START, card),)), [contract("T5", name="ci", vcpu=8)], units=8)["ci"]
    # 8 instances × 24 h: €38.40 at the card, €19.20 at the catalogue; counterfactual 8 × 24 × €0.80
    assert out.counterfactual == Decimal("153.60")
    assert out.net_saving == Decimal("115.20") and out.net_saving_planning == Decimal("134.40")


def summary(strategy: Strategy, **kw: object) -> StrategySummary:
    base = dict(strategy=strategy, interruptions=10, instance_hours=1000.0, wasted_unit_hours=1.0,
                reclaimable_unit_hours=1000.0, fallback_starts=0, shortfall_unit_hours=0.5, unit_hours_wanted=1000.0,
                counterfactual=Decimal(100), cost=Decimal(40), net_saving=Decimal(60),
                net_saving_planning=Decimal(62), depth_premium=Decimal(0), worst_step_loss_pct=15.0)
    return StrategySummary(**{**base, **kw})  # type: ignore[arg-type]


def test_the_verdicts_say_pass_or_fail_for_each_target_and_each_baseline() -> None:
    ours = summary(Strategy.DEPTH_FIRST)
    price = summary(Strategy.PRICE_FIRST, interruptions=20, worst_step_loss_pct=15.0)
    single = summary(Strategy.SINGLE_CHEAPEST, interruptions=5, worst_step_loss_pct=100.0)
    got = {label: ok for label, ok, _ in verdicts([ours, price, single])}
    assert got == {"shortfall ≤ 0.1 % of capacity-hours": True, "wasted work ≤ 3 % of reclaimable hours": True,
                   "net saving ≥ 55 % (planning rates)": True,
                   "interruptions/h below price-first": True, "worst 5-min loss below price-first": False,
                   "interruptions/h below single-cheapest": False, "worst 5-min loss below single-cheapest": True}
    short = {label: ok for label, ok, _ in verdicts([summary(Strategy.DEPTH_FIRST, shortfall_unit_hours=2.0)])}
    assert short["shortfall ≤ 0.1 % of capacity-hours"] is False and len(short) == 3
