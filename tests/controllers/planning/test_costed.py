"""Expected-cost placement: a reclaim's price is the workload's own, and its tolerance bounds the fill."""

from __future__ import annotations

from decimal import Decimal

import pytest

from controllers.planning import Claim, PlannerConfig, PoolState, Strategy, plan
from controllers.planning.risk import baseline_reclaim_p, expected_rate_pct_h, interruption_hours

from ..builders import contract, pool
from ..test_planner import NOW, units_by_pool

# twelve pools of one unit an instance, guaranteed rate 0.40: the six cheapest (0.10-0.15) forecast to be
# reclaimed within the hour at ``hot``, the six dearer ones (0.20-0.25) at 0.5 %
CHEAP, DEAR = [f"c{i}" for i in range(6)], [f"d{i}" for i in range(6)]


def region(hot: float) -> list[PoolState]:
    cheap = [PoolState(pool(pid, hall=f"h{i % 3 + 1}", rate=f"{0.10 + i / 100:.2f}"), 1000, reclaim_p_1h=hot)
             for i, pid in enumerate(CHEAP)]
    dear = [PoolState(pool(pid, hall=f"h{i % 3 + 1}", rate=f"{0.20 + i / 100:.2f}"), 1000, reclaim_p_1h=0.005)
            for i, pid in enumerate(DEAR)]
    return cheap + dear


def in_cheap(units: dict[str, int]) -> int:
    """Units in the six cheap pools."""
    return sum(n for pid, n in units.items() if pid in CHEAP)


OURS = PlannerConfig(strategy=Strategy.EXPECTED_COST)  # T5's contracts ask price-first of their own


@pytest.mark.parametrize(("tier", "fields", "hot", "pays_for_calm"), [
    # stateless (T5: 30 s drain): a reclaim costs 3.5 min of work, 0.2 x 0.058 h x 0.40 EUR = 0.005 EUR an hour
    pytest.param("T5", {}, 0.2, False, id="a reclaim costs little: the cheap pools, as price-first"),
    # a 4-hour checkpoint interval: a reclaim costs 2 h, 0.2 x 2.06 x 0.40 = 0.16 EUR an hour > the 0.10 saved
    pytest.param("T5", {"checkpoint": {"mode": "periodic", "interval_min": 240}}, 0.2, True,
                 id="a reclaim costs two hours of work: the calm pools"),
    # cheap by expected cost (T4: 4 min a reclaim), but 90 units at 30 %/h is above T4's tolerance of 5 %/h
    pytest.param("T4", {}, 0.3, True, id="a tight tolerance buys calm pools until the fill is within it"),
    pytest.param("T4", {}, 0.005, False, id="nothing is hot: the cheap pools"),
])
def test_each_claim_pays_for_calm_pools_only_as_far_as_its_own_reclaims_cost_and_tolerance_need(
        tier: str, fields: dict[str, object], hot: float, pays_for_calm: bool) -> None:
    c = contract(tier, **fields)
    pools = region(hot)
    p = plan([Claim(c, 100)], pools, NOW, config=OURS).plans["wk"]
    price = plan([Claim(c, 100)], pools, NOW, config=PlannerConfig(strategy=Strategy.PRICE_FIRST)).plans["wk"]
    ours, theirs = units_by_pool(p), units_by_pool(price)
    assert p.strategy is Strategy.EXPECTED_COST and p.shortfall_units == 0
    assert sum(ours.values()) == sum(theirs.values())
    assert (in_cheap(ours) < in_cheap(theirs)) is pays_for_calm and in_cheap(ours) <= in_cheap(theirs)
    p_of = {s.pool_id: s.reclaim_p for s in pools}
    rate = 100 * sum(n * p_of[pid] for pid, n in ours.items()) / sum(ours.values())
    assert rate <= float(c.max_interruption_rate_pct_h)
    # ADR-08's premium: what the plan paid over price-first under the same caps, only where it left the cheap pools
    assert p.depth_premium_eur_h == p.cost_eur_h - price.cost_eur_h
    assert (p.depth_premium_eur_h > 0) is pays_for_calm


def test_the_expected_rate_is_the_share_of_units_reclaimed_within_the_hour() -> None:
    assert expected_rate_pct_h({0: 30, 1: 70}, [0.1, 0.0]) == pytest.approx(3.0)
    assert expected_rate_pct_h({}, []) == 0.0


def test_a_contract_whose_tolerance_no_fill_meets_gets_the_calmest_fill_and_a_note() -> None:
    c = contract("T4", max_interruption_rate_pct_h=1)
    pools = [PoolState(s.pool, s.available_instances, reclaim_p_1h=0.3) for s in region(0.3)]
    p = plan([Claim(c, 100)], pools, NOW, config=OURS).plans["wk"]
    assert p.shortfall_units == 0 and any("above the contract's tolerance of 1 %/h" in n for n in p.notes)


@pytest.mark.parametrize(("tier", "fields", "hours"), [
    ("T4", {}, 0.0 + (180 + 60) / 3600),                                 # stateless: the replacement and drain
    ("T3", {"max_unit_length_min": 40}, 1 / 3 + (180 + 30) / 3600),      # requeued: half the unit
    ("T1", {}, 0.035 * 0.5 + (180 + 90) / 3600),                         # a final write: lost only without it
    ("T1", {"checkpoint": {"mode": "periodic", "interval_min": 30}}, 0.25 + (180 + 90) / 3600),
])
def test_a_reclaim_costs_a_workload_its_lost_work_by_its_checkpoint_rule_plus_replacement_and_drain(
        tier: str, fields: dict[str, object], hours: float) -> None:
    assert interruption_hours(contract(tier, **fields)) == pytest.approx(hours, abs=1e-6)


def test_the_baseline_shrinks_a_pool_with_little_history_towards_its_group_and_the_group_towards_the_region(
        ) -> None:
    exposure = {"busy-a": (40.0, 1000.0), "new-a": (0.0, 0.0), "busy-b": (1.0, 1000.0), "new-b": (0.0, 0.0)}
    groups = {"busy-a": "a", "new-a": "a", "busy-b": "b", "new-b": "b"}
    p = baseline_reclaim_p(exposure, groups)
    assert p["new-a"] > p["busy-b"] and p["new-a"] > p["new-b"]  # no history: the group's rate, not zero
    assert p["busy-a"] == pytest.approx(1 - __import__("math").exp(-(40 + 200 * (40 + 200 * 41 / 2000) / 1200)
                                                                    / 1200), rel=1e-4)
    assert 0.0 < p["new-b"] < p["busy-a"]
    assert baseline_reclaim_p({}, {}) == {}
    assert Decimal(0) == Decimal(str(baseline_reclaim_p({"x": (0.0, 0.0)}, {})["x"]))


@pytest.mark.parametrize(("given", "used"), [(None, 0.0), (float("nan"), 0.0), (1.7, 1.0), (-0.2, 0.0), (0.3, 0.3)])
def test_a_forecast_out_of_range_or_not_a_number_is_held_to_a_probability_or_replaced_by_the_catalogue_rate(
        given: float | None, used: float) -> None:
    assert PoolState(pool("p"), 1, reclaim_p_1h=given).reclaim_p == used  # the builder's catalogue rate is 0


def _big(n: int = 16) -> list[PoolState]:
    """n pools whose 16-vCPU instances hold four 4-vCPU units, rates 0.40-0.55 an instance (0.10-0.14 a unit)."""
    return [PoolState(pool(f"b{i:02d}", hall=f"h{i % 3 + 1}", rate=f"{0.40 + i / 100:.2f}", vcpu=16), 1000,
                      reclaim_p_1h=0.01) for i in range(n)]


@pytest.mark.parametrize("units", [40, 37, 100, 60])
def test_expected_cost_fills_whole_instances_where_price_first_leaves_them_part_filled(units: int) -> None:
    c = contract("T5")
    ours = plan([Claim(c, units)], _big(), NOW, config=OURS).plans["wk"]
    price = plan([Claim(c, units)], _big(), NOW, config=PlannerConfig(strategy=Strategy.PRICE_FIRST)).plans["wk"]
    for p in (ours, price):
        assert p.shortfall_units == 0 and sum(units_by_pool(p).values()) == units
    part_filled = [a for a in ours.allocations if a.units % 4]
    assert len(part_filled) <= 1                                 # only the last units, when not a multiple of 4
    assert sum(a.instances for a in ours.allocations) == -(-units // 4)
    assert sum(a.instances for a in ours.allocations) <= sum(a.instances for a in price.allocations)
    assert max(units_by_pool(ours).values()) <= max(1, units * 15 // 100)   # the same pool cap
    if units == 40:  # the cap is 6 units a pool: price-first buys two instances for six units, ours one for four
        assert sum(a.instances for a in price.allocations) > sum(a.instances for a in ours.allocations)
        assert ours.cost_eur_h < price.cost_eur_h


def test_a_replan_of_expected_cost_adds_whole_instances_and_fills_a_part_filled_one_it_holds_first() -> None:
    c = contract("T5")
    first = plan([Claim(c, 37)], _big(), NOW, config=OURS)
    more = plan([Claim(c, 46)], _big(), NOW, previous=first, config=OURS).plans["wk"]
    assert more.shortfall_units == 0 and sum(units_by_pool(more).values()) == 46
    assert len([a for a in more.allocations if a.units % 4]) <= 1
    kept = units_by_pool(first.plans["wk"])
    assert all(units_by_pool(more).get(pid, 0) >= n for pid, n in kept.items())   # nothing held moved
