"""Running instances do not move for another plan's instances that were never launched (issue 18: the fleet
simulation's breaker trips). When the previous plans want more in a pool than its room, what they want beyond
what they hold yields (``decide.unlaunched_yield``), so the planner re-plans those plans and keeps every running
instance where it is. Before, it re-planned the lowest-priority plan there on the room the others' wants left,
and a pool excluded as full lost a workload's running units a pass until the breaker tripped."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import pytest

from controllers.controller.decide import begin, decide, unlaunched_yield
from controllers.controller.decision import Desired, Place, WritePlans
from controllers.controller.model import Glance, InputsInForce, Observation, Observed, Purpose, Terminate
from controllers.controller.settings import ControllerSettings
from controllers.planning import Allocation, PlanSet, PoolState, Strategy, WorkloadPlan
from controllers.planning import Purpose as PlanPurpose
from testkit.builders import PARTITION, T0, contracts
from tests.controllers.builders import pool
from tests.controllers.controller.test_decide import ETL, POOLS, TRAIN, acting, demand, market, row

R = PlanPurpose.RECLAIMABLE


def _plan(w: str, allocs: dict[str, tuple[int, int]], short: int = 0) -> WorkloadPlan:
    return WorkloadPlan(w, "d", Strategy.DEPTH_FIRST,
                        tuple(Allocation(pid, R, u, n, Decimal(1)) for pid, (u, n) in allocs.items()),
                        sum(u for u, _ in allocs.values()) + short, 0, short, Decimal(0))


def _state(pid: str, room: int) -> PoolState:
    return PoolState(pool(pid), available_instances=room)


def _live(w: str, pid: str, n: int) -> list[Observed]:
    return [Observed(f"{w}-{pid}-{i}", "node", w, pid, PARTITION, 1, Purpose.RECLAIMABLE, "active", "h1", T0)
            for i in range(n)]


@pytest.mark.parametrize(("room", "live", "after"), [
    pytest.param(10, {"a": 6, "b": 0}, {"a": {"p00": (12, 6)}, "b": {"p00": (8, 4)}},
                 id="room for every plan: the very plans"),
    pytest.param(6, {"a": 6, "b": 0}, {"a": {"p00": (12, 6)}, "b": {}},
                 id="room short: the plan holding nothing there yields its unlaunched instances, short by their units"),
    pytest.param(7, {"a": 4, "b": 1}, {"a": {"p00": (8, 4)}, "b": {"p00": (2, 1)}},
                 id="each plan keeps what it holds there; only what it never launched yields"),
])
def test_what_plans_want_beyond_what_they_hold_yields_when_the_room_is_short(
        room: int, live: dict[str, int], after: dict[str, dict[str, tuple[int, int]]]) -> None:
    prev = PlanSet(1, T0, {"a": _plan("a", {"p00": (12, 6)}), "b": _plan("b", {"p00": (8, 4), "p01": (2, 1)})})
    observed = [o for w, n in live.items() for o in _live(w, "p00", n)]
    got = unlaunched_yield(prev, [_state("p00", room), _state("p01", 50)], observed)
    if after == {"a": {"p00": (12, 6)}, "b": {"p00": (8, 4)}}:
        assert got is prev
        return
    for w, allocs in after.items():
        p = got.plans[w]
        mine = {a.pool_id: (a.units, a.instances) for a in p.allocations if a.pool_id == "p00"}
        assert mine == allocs
        assert p.shortfall_units == prev.plans[w].units_in(R) - sum(a.units for a in p.allocations)
        assert ("p01" in p.pools) is (w == "b"), "other pools untouched"


def test_through_the_controller_a_full_pool_keeps_a_lower_priority_workload_s_running_units() -> None:
    """``train`` (T1) and ``etl`` (T3) share p00; etl's 6 run there, train's 4 were refused; p00 is then excluded
    as full (its room: what the plans hold there, 6). On main the planner re-planned etl (lower priority) on the
    room train's 4 unlaunched left: 4 of etl's running instances surplus, and the next pass the next workload."""
    desired = Desired(ControllerSettings("r1", PARTITION), contracts(TRAIN, ETL))
    mem = acting(desired)
    work = demand(TRAIN, 40) + demand(ETL, 40)
    first = decide(Observation(Glance(1, False, 0, (), {}), {}, (), work, market(), {}, {}, 0), desired, mem, T0)
    in_p00 = {p.launch.workload: p.launch.count for p in first.of(Place) if p.launch.key.pool == "p00"}
    assert set(in_p00) == {"train", "etl"}, "the scenario needs both planned in p00"
    halls = {p.pool_id: p.hall for p in POOLS}
    running = tuple(Observed(f"{a.launch.key.pool}-{a.launch.workload}-{n}", f"node-{n}", a.launch.workload,
                             a.launch.key.pool, PARTITION, first.generation, a.launch.key.purpose, "active",
                             halls[a.launch.key.pool], T0 - timedelta(hours=1))
                    for a in first.of(Place) for n in range(a.launch.count)
                    if not (a.launch.workload == "train" and a.launch.key.pool == "p00"))
    rows = {o.instance_id: row(o, 3) for o in running}
    later = T0 + timedelta(minutes=1)
    glance = Glance(1, False, first.generation, running, rows)
    mem2, _ = begin(glance, desired, first.memory, later)
    full = replace(market(), inputs=InputsInForce({}, {}, set(), set(), {"p00"}))
    second = decide(Observation(glance, rows, (), work, full, {}, {}, 0), desired, mem2, later)
    (plans,) = second.of(WritePlans)
    etl_p00 = sum(a.instances for a in plans.plans["etl"].allocations if a.pool_id == "p00")
    assert etl_p00 == in_p00["etl"], "etl keeps its running instances in the full pool"
    assert not [t for t in second.of(Terminate) if t.instance.pool == "p00"]
    assert second.gated is not None and second.held == 0
    moved = [p.launch for p in second.of(Place) if p.launch.workload == "train"]
    assert moved and "p00" not in {a.key.pool for a in moved}, "train's unlaunched 4 are placed elsewhere"
    assert sum(a.count for a in moved) == in_p00["train"]


def test_a_lost_hall_re_plans_its_workloads_without_moving_what_runs_in_the_other_halls() -> None:
    """Hall h1 lost (its instances noticed): every workload with an allocation there is re-planned, from its plan
    less the h1 allocations. Made from scratch instead (main), the re-plan moved running units in h2 and h3 too
    when the ranking had moved since: the fleet simulation's hall reclaim tripped the breakers on it."""
    desired = Desired(ControllerSettings("r1", PARTITION), contracts(TRAIN, ETL))
    mem = acting(desired)
    work = demand(TRAIN, 40) + demand(ETL, 40)
    first = decide(Observation(Glance(1, False, 0, (), {}), {}, (), work, market(), {}, {}, 0), desired, mem, T0)
    halls = {p.pool_id: p.hall for p in POOLS}
    running = tuple(Observed(f"{a.launch.key.pool}-{a.launch.workload}-{n}", f"node-{n}", a.launch.workload,
                             a.launch.key.pool, PARTITION, first.generation, a.launch.key.purpose,
                             "notified" if halls[a.launch.key.pool] == "h1" else "active",
                             halls[a.launch.key.pool], T0 - timedelta(hours=1))
                    for a in first.of(Place) for n in range(a.launch.count))
    assert sum(o.status == "notified" for o in running) >= 10
    rows = {o.instance_id: row(o, 3) for o in running}
    later = T0 + timedelta(minutes=1)
    glance = Glance(1, False, first.generation, running, rows)
    mem2, _ = begin(glance, desired, first.memory, later)
    # the ranking moved since the first plan: h2/h3 pools the plans did not use now rank first
    used = {o.pool for o in running}
    scores = {p.pool_id: (0.9 if p.pool_id not in used else 0.3) for p in POOLS}
    moved = replace(market(), inputs=InputsInForce(scores, {}, set(), set()))
    second = decide(Observation(glance, rows, (), work, moved, {}, {}, 0), desired, mem2, later)
    assert "h1" in second.memory.floor.lost
    assert not second.of(Terminate) and second.gated is not None and second.held == 0, "nothing outside h1 surplus"
    (plans,) = second.of(WritePlans)
    for w in ("train", "etl"):
        before = {(a.pool_id, a.purpose): a.instances for a in first.memory.previous.plans[w].allocations  # type: ignore[union-attr]
                  if halls[a.pool_id] != "h1"}
        after = {(a.pool_id, a.purpose): a.instances for a in plans.plans[w].allocations}
        assert all(after.get(k, 0) >= n for k, n in before.items()), (w, before, after)
        assert not any(halls[pid] == "h1" for pid, _ in after), "nothing planned in the lost hall"


def test_a_floor_allocation_that_yields_comes_off_the_plan_s_floor() -> None:
    floor = WorkloadPlan("a", "d", Strategy.DEPTH_FIRST, (Allocation("c0", PlanPurpose.FLOOR, 8, 4, Decimal(1)),
                                                          Allocation("p01", R, 4, 2, Decimal(1))), 12, 8, 0, Decimal(0))
    observed = [Observed("a-c0-0", "node", "a", "c0", PARTITION, 1, Purpose.FLOOR, "active", "h1", T0)]
    got = unlaunched_yield(PlanSet(1, T0, {"a": floor}), [_state("c0", 1), _state("p01", 50)], observed).plans["a"]
    assert [(a.pool_id, a.units, a.instances) for a in got.allocations] == [("c0", 2, 1), ("p01", 4, 2)]
    assert (got.floor_units, got.shortfall_units) == (2, 6)
