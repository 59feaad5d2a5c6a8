"""The replay simulator on hand-made traces: the ledger, losses per contract, fallback, exclusion, and
depth-first against price-first when cheap pools are the ones reclaimed."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from controllers.planning import Strategy
from controllers.replay import PoolHistory, Reclaim, ReplayConfig, Trace, replay
from testkit.paths import REPO

from .builders import contract, pool

START = datetime(2026, 11, 1, tzinfo=UTC)


def calm_trace(days: float = 1, n: int = 10, reclaims: tuple[Reclaim, ...] = (), **kw: object) -> Trace:
    pools = tuple(pool(f"p{i:02d}", hall=f"h{i % 3 + 1}", rate="0.10") for i in range(n))
    return Trace(START, START + timedelta(days=days), pools, {p.pool_id: 100 for p in pools}, reclaims,
                 **kw)  # type: ignore[arg-type]


def test_with_no_reclaims_the_ledger_is_hand_computable_to_the_cent() -> None:
    # 8 units, 1 unit per instance at €0.10/h; guaranteed €0.40/h per unit; 24 h.
    out = replay(calm_trace(days=1), [contract("T5", name="ci")], units=8)["ci"]
    assert out.interruptions == 0 and out.wasted_unit_hours == 0 and out.shortfall_unit_hours == 0
    assert out.cost == Decimal("19.20") and out.counterfactual == Decimal("76.80")
    assert out.net_saving == Decimal("57.60") == out.counterfactual - out.cost


def test_a_no_notice_loss_of_a_requeue_unit_wastes_half_the_unit() -> None:
    wave = Reclaim(START + timedelta(hours=1), "p00", share=1.0, no_notice_share=1.0, hold=timedelta(hours=1))
    c = contract("T3", name="frames", max_unit_length_min=60)
    out = replay(calm_trace(reclaims=(wave,)), [c], units=8)["frames"]
    assert out.interruptions == 1 and out.no_notice_losses == 1
    assert out.wasted_unit_hours == 0.5  # one unit of 60 min, half lost on average


def test_a_final_checkpoint_on_notice_loses_nothing_and_without_notice_half_an_interval() -> None:
    c = contract("T2", name="train", checkpoint={"interval_min": 30})
    noticed = Reclaim(START + timedelta(hours=1), "p00", share=1.0, no_notice_share=0.0)
    silent = Reclaim(START + timedelta(hours=1), "p00", share=1.0, no_notice_share=1.0)
    assert replay(calm_trace(reclaims=(noticed,)), [c], units=8)["train"].wasted_unit_hours == 0
    lost = replay(calm_trace(reclaims=(silent,)), [c], units=8)["train"]
    assert lost.interruptions == 1 and lost.wasted_unit_hours == 0.25


def test_lost_instances_are_replaced_at_the_next_step() -> None:
    wave = Reclaim(START + timedelta(hours=1), "p00", share=1.0, hold=timedelta(hours=6))
    out = replay(calm_trace(reclaims=(wave,)), [contract("T5", name="ci")], units=8)["ci"]
    assert out.interruptions == 1
    assert out.shortfall_unit_hours <= 5 / 60 + 1e-9  # at most one 5-minute step short


def test_a_hall_wide_reclaim_triggers_fallback_within_the_spend_cap_then_shortfall_until_capacity_returns() -> None:
    # everything reclaimable is taken for 12 h; guaranteed pools exist; the cap buys ~1 h of 8 units at €0.40
    pools = [pool(f"p{i}", hall="h1") for i in range(8)]
    pools += [pool(f"g{h}", hall=h, model="guaranteed", rate="0.40") for h in ("h1", "h2", "h3")]
    waves = tuple(Reclaim(START + timedelta(hours=1), f"p{i}", share=1.0, hold=timedelta(hours=12))
                  for i in range(8))
    trace = Trace(START, START + timedelta(hours=14), tuple(pools), {p.pool_id: 100 for p in pools}, waves)
    c = contract("T2", name="deadline", fallback={"spend_cap_24h_eur": 3, "approver": "b@example.org"})
    out = replay(trace, [c], units=8)["deadline"]
    assert out.fallback_starts == 1
    assert Decimal("2.80") <= out.fallback_cost <= Decimal("3.00")  # never above the 24 h cap
    # the 7 reclaimable units (1 of 8 is floor) are short for the 12 h the pools are held, less what the cap
    # bought; the plan is retried every step, so the shortfall ends when the capacity comes back
    assert out.shortfall_unit_hours == pytest.approx(7 * 12 - out.fallback_unit_hours)


def test_three_waves_in_30_minutes_exclude_a_pool_for_two_hours_doubling_on_repeat() -> None:
    history = PoolHistory(calm_trace(days=1), ReplayConfig())

    def excluded(at: timedelta) -> bool:
        return next(s for s in history.states(START + at) if s.pool_id == "p00").excluded

    for minute in (10, 20, 30):
        history.record(Reclaim(START + timedelta(minutes=minute), "p00", share=0.01, hold=timedelta(minutes=1)))
    assert excluded(timedelta(minutes=31)) and excluded(timedelta(minutes=149))
    assert not excluded(timedelta(minutes=151))
    for minute in (200, 210, 220):
        history.record(Reclaim(START + timedelta(minutes=minute), "p00", share=0.01, hold=timedelta(minutes=1)))
    assert excluded(timedelta(minutes=220 + 239)) and not excluded(timedelta(minutes=220 + 241))


def test_two_waves_or_a_drill_do_not_exclude_a_pool() -> None:
    history = PoolHistory(calm_trace(days=1), ReplayConfig())
    for minute, drill in ((10, False), (20, False), (25, True)):
        history.record(Reclaim(START + timedelta(minutes=minute), "p00", share=0.01, drill=drill))
    assert not next(s for s in history.states(START + timedelta(minutes=26)) if s.pool_id == "p00").excluded


def reclaim_heavy_cheap_trace(seed: int = 3) -> Trace:
    """Ten cheap pools reclaimed often, ten dearer pools rarely; two weeks of warm-up history."""
    rng = random.Random(seed)
    pools = [pool(f"cheap{i}", hall=f"h{i % 3 + 1}", rate="0.08") for i in range(10)]
    pools += [pool(f"deep{i}", hall=f"h{i % 3 + 1}", rate="0.16") for i in range(10)]
    start = START + timedelta(days=14)
    waves = []
    t = START
    while t < start + timedelta(days=14):
        t += timedelta(minutes=rng.randint(20, 60))
        victim = f"cheap{rng.randrange(10)}" if rng.random() < 0.9 else f"deep{rng.randrange(10)}"
        waves.append(Reclaim(t, victim, share=0.3, no_notice_share=0.05, hold=timedelta(minutes=30)))
    return Trace(start, start + timedelta(days=14), tuple(pools), {p.pool_id: 200 for p in pools}, tuple(waves),
                 seed=seed, warmup=timedelta(days=14))


def test_depth_first_has_fewer_interruptions_and_less_waste_than_price_first_and_pays_a_premium_for_it() -> None:
    trace = reclaim_heavy_cheap_trace()
    c = contract("T3", name="frames", max_unit_length_min=60)
    ours = replay(trace, [c], units=40, config=ReplayConfig(strategy=Strategy.DEPTH_FIRST))["frames"]
    cheap = replay(trace, [c], units=40, config=ReplayConfig(strategy=Strategy.PRICE_FIRST))["frames"]
    assert ours.interruptions < cheap.interruptions / 2
    assert ours.wasted_unit_hours < cheap.wasted_unit_hours
    assert ours.depth_premium > 0 and cheap.depth_premium == 0


def test_the_replay_is_deterministic_for_a_seed() -> None:
    trace = reclaim_heavy_cheap_trace(seed=5)
    c = contract("T3", name="frames", max_unit_length_min=60)
    a = replay(trace, [c], units=40)["frames"]
    b = replay(trace, [c], units=40)["frames"]
    assert (a.interruptions, a.wasted_unit_hours, a.net_saving) == (b.interruptions, b.wasted_unit_hours, b.net_saving)


def test_the_caps_bound_the_share_of_a_claim_one_reclaim_can_take_and_a_single_pool_does_not() -> None:
    # twenty pools in ten aggregates; the cheapest one is wholly reclaimed at noon
    pools = tuple(pool(f"p{i:02d}", hall=f"h{i % 3 + 1}", agg=f"a{i % 10}", rate="0.05" if i == 0 else "0.10")
                  for i in range(20))
    wave = Reclaim(START + timedelta(hours=12), "p00", share=1.0)
    trace = Trace(START, START + timedelta(days=1), pools, {p.pool_id: 100 for p in pools}, (wave,))
    c = contract("T5", name="ci")
    capped = replay(trace, [c], units=40, config=ReplayConfig(strategy=Strategy.PRICE_FIRST))["ci"]
    single = replay(trace, [c], units=40, config=ReplayConfig(strategy=Strategy.SINGLE_CHEAPEST))["ci"]
    assert 0 < capped.worst_step_loss_units <= 6  # 15 % of 40
    assert single.worst_step_loss_units == 40


@pytest.mark.slow
def test_on_a_recorded_region_trace_depth_first_is_interrupted_less_than_price_first_and_both_waste_little() -> None:
    # The simulated region, where guaranteed requests fill free room before they reclaim: three days after two
    # of warm-up, the fourteen example workloads. (`sco simulate --strategy compare` runs the 30-day version.)
    # Issue 19 (kept plans follow the room): since plans leave pools whose free room fell below what they hold,
    # both strategies are interrupted about half as often and waste less than half as much (depth-first
    # 0.88 -> 0.45 %/h, wasted 0.112 -> 0.049 %; price-first 1.07 -> 0.54 %/h, 0.137 -> 0.039 %), and depth-first
    # no longer wastes less than price-first on this trace (0.049 % vs 0.039 %): its lower interruption rate is
    # what still holds. docs/benchmarks.md, "Re-plans keep what a plan holds" has the figures.

    from contracts.compiler import check_repo
    from controllers.replay import summarise
    from controllers.replay.from_region import trace_from_region
    from controllers.simregion.config import RegionConfig

    contracts = [w.contract for w in check_repo(REPO / "deploy" / "contracts").workloads]
    trace = trace_from_region(RegionConfig(seed=3), datetime(2026, 10, 1, tzinfo=UTC), days=3, warmup_days=2)
    ours, cheap = (summarise(s, replay(trace, contracts, 40, ReplayConfig(strategy=s)))
                   for s in (Strategy.DEPTH_FIRST, Strategy.PRICE_FIRST))
    # per instance-hour, as the target reads: with the hall cap (ADR-06) ours places more instance-hours
    # than price-first, so a raw count (199 vs 194 on this trace) is not the comparison
    assert ours.interruption_rate_pct_h < cheap.interruption_rate_pct_h
    assert ours.wasted_pct < 0.1 and cheap.wasted_pct < 0.1   # % of reclaimable hours; the target is 3 %
    assert ours.depth_premium > 0 and cheap.depth_premium == 0
