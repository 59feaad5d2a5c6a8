"""A re-plan keeps what the plan holds and moves only what it must; kept plans follow the room (issue 19).

Every case re-plans on a reversed ranking, so a planner that re-made the plan from scratch would move most of
what it held: what stays put stays because of the rule, not because the ranking did not move.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from controllers.planning import Claim, PlanSet, PoolState, Purpose, WorkloadPlan, plan
from controllers.planning.incremental import same_placement

from ..builders import contract, pool
from ..test_planner import NOW, floor_pools, states, units_by_pool


def reranked(pools: list[PoolState], excluded: str = "", room: dict[str, int] | None = None) -> list[PoolState]:
    """The ranking reversed (the score, and the reclaim forecast: the pools ranked first are the likeliest to be
    reclaimed); pool ``excluded`` excluded; ``room``: available instances of some pools."""
    room = room or {}
    return [replace(s, score=1.0 - s.score, reclaim_p_1h=s.score, excluded=s.pool_id == excluded,
                    available_instances=room.get(s.pool_id, s.available_instances)) for s in pools]


def moved(before: WorkloadPlan, after: WorkloadPlan, purpose: Purpose = Purpose.RECLAIMABLE) -> int:
    """Units the re-plan took out of pools the plan held them in."""
    old, new = units_by_pool(before, purpose), units_by_pool(after, purpose)
    return sum(max(0, n - new.get(pid, 0)) for pid, n in old.items())


def test_a_replan_from_scratch_on_the_reversed_ranking_would_move_most_of_the_plan() -> None:
    first = plan([Claim(contract(name="wa"), 100)], states(), NOW).plans["wa"]
    scratch = plan([Claim(contract(name="wa"), 110)], reranked(states()), NOW).plans["wa"]
    assert moved(first, scratch) >= 50


def test_a_raised_claim_keeps_every_unit_it_held_and_places_only_the_extra_units() -> None:
    first = plan([Claim(contract(name="wa"), 100)], states(), NOW)
    second = plan([Claim(contract(name="wa"), 110)], reranked(states()), NOW, previous=first)
    before, after = first.plans["wa"], second.plans["wa"]
    assert second.replanned == ("wa",) and after.shortfall_units == 0
    assert moved(before, after) == 0 and sum(units_by_pool(after).values()) == 110
    assert max(units_by_pool(after).values()) <= 16  # the caps on the new target: 15 % of 110


def test_a_lowered_claim_frees_only_the_difference_and_what_the_tighter_caps_exceed() -> None:
    first = plan([Claim(contract(name="wa"), 100)], states(), NOW)
    second = plan([Claim(contract(name="wa"), 60)], reranked(states()), NOW, previous=first)
    before, after = units_by_pool(first.plans["wa"]), units_by_pool(second.plans["wa"])
    assert set(after) <= set(before) and sum(after.values()) == 60
    assert all(after[pid] <= min(before[pid], 9) for pid in after)  # 15 % of 60


def test_an_excluded_pool_moves_only_its_own_units() -> None:
    first = plan([Claim(contract(name="wa"), 100)], states(n=20), NOW)
    before = units_by_pool(first.plans["wa"])
    victim = max(before, key=lambda pid: (before[pid], pid))
    second = plan([Claim(contract(name="wa"), 100)], reranked(states(n=20), excluded=victim), NOW,
                  previous=first)
    after = units_by_pool(second.plans["wa"])
    assert victim not in after and sum(after.values()) == 100
    assert moved(first.plans["wa"], second.plans["wa"]) == before[victim]


def test_a_raised_claim_keeps_its_floor_and_adds_floor_units_beside_it() -> None:
    first = plan([Claim(contract("T1", name="wa"), 100)], floor_pools(committed_free=100), NOW)
    second = plan([Claim(contract("T1", name="wa"), 120)], reranked(floor_pools(committed_free=100)), NOW,
                  previous=first)
    before, after = first.plans["wa"], second.plans["wa"]
    assert after.floor_units == 36 and sum(units_by_pool(after, Purpose.FLOOR).values()) == 36
    assert moved(before, after, Purpose.FLOOR) == 0 and moved(before, after) == 0


def test_a_replan_that_places_the_same_keeps_the_very_plan_and_the_generation() -> None:
    scarce = states(n=10, free=2)
    first = plan([Claim(contract(name="wa"), 40)], scarce, NOW)
    second = plan([Claim(contract(name="wa"), 40)], reranked(scarce), NOW, previous=first)
    assert second.plans["wa"] is first.plans["wa"] and second.generation == first.generation


def test_a_kept_plan_that_wants_more_than_a_pools_room_is_replanned_keeping_the_rest() -> None:
    pools = states(n=20, free=1000)
    first = plan([Claim(contract(name="wa"), 100), Claim(contract(name="wb", vcpu=8), 4)], pools, NOW)
    before = units_by_pool(first.plans["wa"])
    full = max(before, key=lambda pid: (before[pid], pid))
    # other tenants took the room: the pool now gives 5 instances where the plan holds 15
    second = plan([Claim(contract(name="wa"), 100), Claim(contract(name="wb", vcpu=8), 4)],
                  reranked(pools, room={full: 5}), NOW, previous=first)
    after = units_by_pool(second.plans["wa"])
    assert "wa" in second.replanned and after[full] == 5 and sum(after.values()) == 100
    assert moved(first.plans["wa"], second.plans["wa"]) == before[full] - 5
    if full not in first.plans["wb"].pools:
        assert second.plans["wb"] is first.plans["wb"]


def test_when_kept_plans_outgrow_a_pools_room_the_lowest_priority_one_moves_first() -> None:
    pools = [PoolState(pool(f"p{i:02d}", hall=f"h{i % 3 + 1}"), 1000, score=1 - i / 100) for i in range(9)]
    claims = [Claim(contract(name="first"), 8), Claim(contract(name="last"), 8)]  # same tier: name order
    prev = plan(claims, pools, NOW)
    held = Counter[str]()
    for p in prev.plans.values():
        held.update({a.pool_id: a.instances for a in p.allocations})
    assert held["p00"] == 2
    nxt = plan(claims, [replace(s, available_instances=1) if s.pool_id == "p00" else s for s in pools], NOW,
               previous=prev)
    assert nxt.plans["first"] is prev.plans["first"] and nxt.replanned == ("last",)
    assert "p00" not in nxt.plans["last"].pools and nxt.plans["last"].shortfall_units == 0
    assert nxt.plans["last"].pools - prev.plans["last"].pools == {"p08"}


def test_a_new_contract_version_is_planned_from_scratch() -> None:
    first = plan([Claim(contract(name="wa"), 100)], states(), NOW)
    bumped = contract(name="wa", version=2)
    second = plan([Claim(bumped, 100)], reranked(states()), NOW, previous=first)
    assert second.plans["wa"] == plan([Claim(bumped, 100)], reranked(states()), NOW).plans["wa"]
    assert moved(first.plans["wa"], second.plans["wa"]) > 0


def test_same_placement_sees_a_moved_unit() -> None:
    p = plan([Claim(contract(name="wa"), 100)], states(), NOW).plans["wa"]
    a = p.allocations[0]
    shifted = replace(p, allocations=(replace(a, pool_id="elsewhere"), *p.allocations[1:]))
    assert same_placement(p, replace(p, notes=("n",))) and not same_placement(p, shifted)
    assert isinstance(PlanSet(generation=1, made_at=NOW), PlanSet)


def test_units_fallback_covers_come_off_the_reclaimable_part_alone_and_come_back_when_it_stops_covering() -> None:
    c = contract("T1", name="wa")
    first = plan([Claim(c, 100)], floor_pools(committed_free=100), NOW)
    covered = plan([Claim(c, 100, covered=20)], floor_pools(committed_free=100), NOW, previous=first)
    back = plan([Claim(c, 100)], floor_pools(committed_free=100), NOW, previous=covered)
    before, during, after = first.plans["wa"], covered.plans["wa"], back.plans["wa"]
    assert covered.replanned == ("wa",) and during.shortfall_units == 0
    assert during.floor_units == before.floor_units == 30                   # the floor is the claim's, untouched
    assert sum(units_by_pool(during).values()) == sum(units_by_pool(before).values()) - 20 == 50
    assert moved(during, after) == 0 and sum(units_by_pool(after).values()) == 70
    scratch = plan([Claim(c, 100, covered=20)], floor_pools(committed_free=100), NOW).plans["wa"]
    assert sum(units_by_pool(scratch).values()) == 50 and scratch.floor_units == 30
