"""No relaunch into a pool a capacity refusal just showed full (issue 18): within a pass ``apply`` makes no other
launch into the pool (no token spent on it); across passes the refusal is remembered (``Memory.refused_pools``)
and ``decide`` gives the pool no room beyond what we hold there until a rate card taken after the refusal. Before,
only the exclusion watcher's ``full`` (three refusals) did, and the partitions' budgets went on refused launches
(1,654 at 20,000 in the fleet simulation). Pure decide tables and an apply test on the simulated region."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from contracts.events import Event
from contracts.provider import LaunchRequest, OwnerTags
from controllers.controller.decide import begin, decide, pool_states_for, refused_until_card
from controllers.controller.decision import Decision, Desired, Memory, Place
from controllers.controller.model import Glance, Launch, Observation, Observed, Purpose, SlotKey
from controllers.controller.settings import ControllerSettings
from testkit.builders import PARTITION, T0, contracts
from tests.controllers.controller.test_decide import ETL, POOLS, TRAIN, acting, demand, market, world

REFUSED_AT = T0 + timedelta(seconds=30)


@pytest.mark.parametrize(("card_at", "kept"), [
    pytest.param(T0, True, id="a card older than the refusal has not answered it"),
    pytest.param(REFUSED_AT, True, id="a card of the refusal's instant has not either (which came first is unknown)"),
    pytest.param(REFUSED_AT + timedelta(seconds=1), False, id="a card taken after the refusal answers it"),
    pytest.param(None, False, id="a free figure without a time is now: it answers every refusal"),
])
def test_a_refusal_is_remembered_until_a_rate_card_taken_after_it(card_at: datetime | None, kept: bool) -> None:
    assert refused_until_card({"p00": REFUSED_AT}, card_at) == ({"p00": REFUSED_AT} if kept else {})


def _ours(pid: str, n: int) -> list[Observed]:
    return [Observed(f"{pid}-{i}", "node", "etl", pid, PARTITION, 1, Purpose.RECLAIMABLE, "active", "h1",
                     T0 - timedelta(hours=1)) for i in range(n)]


@pytest.mark.parametrize(("pid", "refused", "planned", "available"), [
    pytest.param("p00", {}, None, 50 + 3, id="no refusal: the card's free room plus ours"),
    pytest.param("p00", {"p00": REFUSED_AT}, None, 3,
                 id="a refused pool: no room beyond what we hold there (the card still shows 50 free)"),
    pytest.param("p00", {"p00": REFUSED_AT}, {("etl", "p00"): 2}, 2,
                 id="what we hold there counts as far as the previous plans want it, as for a full exclusion"),
    pytest.param("p01", {"p00": REFUSED_AT}, None, 50 + 3, id="another pool's refusal changes nothing here"),
    pytest.param("c0", {"c0": REFUSED_AT}, None, 20 + 3, id="a reservation's room is read live: not overridden"),
])
def test_the_room_of_a_pool_that_refused_a_launch(pid: str, refused: dict[str, datetime],
                                                  planned: dict[tuple[str, str], int] | None, available: int) -> None:
    states = {st.pool_id: st for st in pool_states_for(replace(market(), free_at=T0), _ours(pid, 3), set(), planned,
                                                       refused)}
    assert (states[pid].excluded, states[pid].available_instances) == (False, available)


def _after_a_refusal(card_at: datetime) -> tuple[Decision, str]:
    """``etl`` placed; one of its instances lost from the pool it holds most in, whose relaunch there was then
    refused for capacity (``REFUSED_AT``); the next pass, with the rate card taken at ``card_at`` still showing
    room there."""
    desired = Desired(ControllerSettings("r1", PARTITION), contracts(TRAIN, ETL))
    glance = Glance(1, False, 0, (), {})
    mem = acting(desired)
    work = demand(ETL, 40)
    first = decide(Observation(glance, {}, (), work, replace(market(), free_at=T0), {}, {}, 0), desired, mem, T0)
    halls = {p.pool_id: p.hall for p in POOLS}
    running = [Observed(f"{a.launch.key.pool}-{n}", f"node-{a.launch.key.pool}-{n}", a.launch.workload,
                        a.launch.key.pool, PARTITION, first.generation, a.launch.key.purpose, "active",
                        halls[a.launch.key.pool], T0 - timedelta(hours=1))
               for a in first.of(Place) for n in range(a.launch.count)]
    reclaimable = [o.pool for o in running if o.purpose is Purpose.RECLAIMABLE]
    pool = max(sorted(set(reclaimable)), key=reclaimable.count)
    lost = next(o for o in running if o.pool == pool)
    first.memory.refused_pools[pool] = REFUSED_AT        # what apply records after the refused relaunch
    later = T0 + timedelta(minutes=1)
    glance2 = Glance(1, False, first.generation, tuple(o for o in running if o is not lost), {})
    mem2, _ = begin(glance2, desired, first.memory, later)
    seen = Observation(glance2, {}, (), work, replace(market(), free_at=card_at), {}, {}, 0)
    return decide(seen, desired, mem2, later), pool


@pytest.mark.parametrize(("card_at", "into_refused", "remembered"), [
    pytest.param(T0, False, True, id="the card predates the refusal: the lost unit is placed elsewhere"),
    pytest.param(REFUSED_AT + timedelta(seconds=10), True, False,
                 id="a card taken after the refusal shows room: the pool is planned on again, the refusal forgotten"),
])
def test_a_refused_pool_gets_no_new_room_until_a_newer_rate_card(card_at: datetime, into_refused: bool,
                                                                 remembered: bool) -> None:
    d, pool = _after_a_refusal(card_at)
    placed = [(p.launch.key.pool, p.launch.count) for p in d.of(Place) if p.launch.workload == "etl"]
    assert sum(n for _, n in placed) == 1, placed
    assert (pool in {pid for pid, _ in placed}) is into_refused
    assert (pool in d.memory.refused_pools) is remembered


def test_apply_makes_no_other_launch_into_a_pool_that_refused_one_this_pass() -> None:
    w = world(10)
    pools = [p.pool_id for p in w.region.catalogue().pools if p.purchase_model.value == "reclaimable"]
    full, other = pools[0], pools[1]
    free = next(e.free_instances for e in w.region.rate_card().entries if e.pool_id == full)

    def place(pid: str, n: int, key: str, workload: str = "etl") -> Place:
        return Place(Launch(SlotKey(workload, pid, Purpose.RECLAIMABLE), n, PARTITION, 1, "T3", "plan", key))

    d = Decision((place(full, free + 1, "too-many"), place(full, 1, "one-more"), place(other, 1, "elsewhere")),
                 Memory.fresh(ControllerSettings("r1", PARTITION)), False, 1, 0)
    report = w.actuator().apply(d, T0)
    assert report.launched == 1 and not report.throttled
    assert w.provider.bucket.spent == 2, "the refused launch and the one elsewhere; none on the second into the pool"
    assert d.memory.refused_pools == {full: T0}
    assert report.events.count("launch-deferred") == 1, report.events
    again = w.actuator().apply(replace(d, actions=(place(full, 1, "next-pass"),),
                                       memory=Memory.fresh(ControllerSettings("r1", PARTITION))), T0)
    assert again.launched == 1, "a later pass decides afresh: the skip is this pass's"


def test_the_request_the_region_refuses() -> None:
    """The double refuses a launch beyond the pool's free room (what the apply test relies on)."""
    from contracts.provider_errors import CapacityUnavailable

    w = world(10)
    pid = next(p.pool_id for p in w.region.catalogue().pools if p.purchase_model.value == "reclaimable")
    free = next(e.free_instances for e in w.region.rate_card().entries if e.pool_id == pid)
    with pytest.raises(CapacityUnavailable):
        w.region.launch(LaunchRequest(pool_id=pid, count=free + 1, owner=OwnerTags(
            workload="etl", pool=pid, partition=PARTITION, generation=1), metadata={}))


def test_the_launches_a_refusal_deferred_are_said_in_one_event_per_pool_and_workload() -> None:
    """A skipped launch is not lost silently: the pass says which workloads' launches into the refused pool it did
    not try, and how many instances, as ``launch-deferred`` (not ``launch-failed``: nothing was tried, so nothing
    counts toward the pool's exclusion for thrash)."""
    w = world(10)
    emitted: list[Event] = []
    w.store.emit = emitted.extend  # type: ignore[attr-defined]
    pools = [p.pool_id for p in w.region.catalogue().pools if p.purchase_model.value == "reclaimable"]
    full = pools[0]
    free = next(e.free_instances for e in w.region.rate_card().entries if e.pool_id == full)

    def place(n: int, key: str, workload: str) -> Place:
        return Place(Launch(SlotKey(workload, full, Purpose.RECLAIMABLE), n, PARTITION, 1, "T3", "plan", key))

    d = Decision((place(free + 1, "too-many", "etl"), place(2, "etl-2", "etl"), place(3, "etl-3", "etl"),
                  place(1, "train-1", "train")),
                 Memory.fresh(ControllerSettings("r1", PARTITION)), False, 1, 0)
    report = w.actuator().apply(d, T0)
    assert report.launched == 0
    deferred = sorted((e.workload, e.pool, dict(e.attributes)) for e in emitted if e.kind == "launch-deferred")
    assert deferred == [("etl", full, {"launches": 2, "instances": 5}),
                        ("train", full, {"launches": 1, "instances": 1})]
    assert [str(e.kind) for e in emitted].count("launch-failed") == 1, "only the launch that was tried failed"
