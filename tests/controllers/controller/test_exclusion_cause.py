"""A full pool is not a dangerous pool (issue 19): an exclusion carries its cause, and only a pool being reclaimed
moves units away; a pool excluded because launches were refused keeps what runs there and takes nothing new.
And partitions see each other's launches: the room a controller plans with is the rate card's free count less
every SCO instance launched since the card, whichever partition launched it. Pure: hand-built signals,
observations and markets on a fixed clock (``test_decide.py`` style). And a full pool has no depth in the planner's
score until a rate card taken after the refusals shows its room again (the ranking's card can predate them)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from controllers.controller.decide import begin, decide, full_pool_score, pool_states_for
from controllers.controller.decision import Decision, Desired, Place, WritePlans
from controllers.controller.exclusion import FULL, RECLAIM, ExclusionWatcher, Signal
from controllers.controller.model import Glance, InputsInForce, Market, Observation, Observed, Purpose, Terminate
from controllers.controller.settings import ControllerSettings
from controllers.planning import PlannerConfig, Strategy
from testkit.builders import PARTITION, T0, contracts
from tests.controllers.controller.test_decide import ETL, POOLS, TRAIN, acting, demand, market, row


def _sig(kind: str, minute: float, n: int = 0, age_s: float | None = None) -> Signal:
    return Signal(kind, "p1", T0 + timedelta(minutes=minute), f"{kind}-{minute}-{n}", age_s=age_s)


@pytest.mark.parametrize(("signals", "cause"), [
    pytest.param([_sig("launch-failed", m) for m in (0, 1, 2)], FULL,
                 id="three refused launches in 10 minutes: the pool is full"),
    pytest.param([_sig("launch-failed", 0), _sig("launch-failed", 1), _sig("notice", 2, age_s=120)], RECLAIM,
                 id="a launch reclaimed young among the refusals: the pool is being reclaimed"),
    pytest.param([_sig("notice", m) for m in (0, 10, 20)], RECLAIM,
                 id="three reclamation waves in 30 minutes: the pool is being reclaimed"),
])
def test_an_exclusion_carries_its_cause(signals: list[Signal], cause: str) -> None:
    w = ExclusionWatcher()
    trips = [ex for s in signals if (ex := w.observe(s)) is not None]
    assert [ex.cause for ex in trips] == [cause]


def test_a_full_pool_that_starts_being_reclaimed_is_excluded_again_for_the_reclaims_not_for_more_refusals() -> None:
    w = ExclusionWatcher()
    first = [ex for m in (0, 1, 2) if (ex := w.observe(_sig("launch-failed", m))) is not None]
    assert [ex.cause for ex in first] == [FULL]
    assert all(w.observe(_sig("launch-failed", m)) is None for m in (3, 4, 5))   # already closed
    again = [ex for m in (10, 20, 30) if (ex := w.observe(_sig("notice", m))) is not None]
    assert [(ex.cause, ex.offences) for ex in again] == [(RECLAIM, 2)]


def _ours(pid: str, n: int, at: timedelta, status: str = "active") -> list[Observed]:
    return [Observed(f"{pid}-{status}-{at}-{i}", "node", "etl", pid, PARTITION, 1, Purpose.RECLAIMABLE, status, "h1",
                     T0 + at) for i in range(n)]


CARD = replace(market(free=50), free_at=T0)


@pytest.mark.parametrize(("mkt", "observed", "excluded", "available"), [
    pytest.param(replace(CARD, inputs=InputsInForce({}, {}, set(), set(), {"p00"})), _ours("p00", 3, -timedelta(1)),
                 False, 3, id="a full pool stays eligible with no room beyond what we hold there"),
    pytest.param(replace(CARD, inputs=InputsInForce({}, {}, {"p00"}, set())), _ours("p00", 3, -timedelta(1)),
                 True, 53, id="a pool being reclaimed is ineligible: its units move away"),
    pytest.param(replace(CARD, others_since_card={"p00": 20}), _ours("p00", 3, -timedelta(1)),
                 False, 50 - 20 + 3, id="another partition's launches since the card hold room the card shows free"),
    pytest.param(replace(CARD, others_since_card={"p00": 20}), _ours("p00", 2, timedelta(seconds=30)),
                 False, 50 - 20 - 2 + 2, id="ours since the card and theirs: every launch since the card counts once"),
    pytest.param(replace(CARD, others_since_card={"p00": 80}), [], False, 0,
                 id="a pool the others filled since the card has no room, never less than none"),
    pytest.param(replace(CARD, others_since_card={"p00": 80}), _ours("p00", 3, -timedelta(1)), False, 3,
                 id="more launched since the card than it showed free: room freed since, ours still count"),
    pytest.param(replace(CARD, others_since_card={"p00": 49}), _ours("p00", 3, timedelta(seconds=30)), False, 3,
                 id="ours since the card among them: what we hold is never more than the room"),
])
def test_the_room_a_controller_plans_with(mkt: Market, observed: list[Observed], excluded: bool,
                                          available: int) -> None:
    states = {st.pool_id: st for st in pool_states_for(mkt, observed, set())}
    assert (states["p00"].excluded, states["p00"].available_instances) == (excluded, available)


FULL_P00 = replace(CARD, inputs=InputsInForce({}, {}, set(), set(), {"p00"}))


@pytest.mark.parametrize(("planned", "available"), [
    pytest.param(None, 3, id="before any plan: everything we hold there"),
    pytest.param({("etl", "p00"): 3}, 3, id="what the plans hold there stays theirs"),
    pytest.param({("etl", "p00"): 5}, 3, id="a plan that wants more than it holds gets no room beyond it"),
    pytest.param({("etl", "p00"): 1, ("train", "p00"): 2}, 1,
                 id="one workload's surplus there is not room for another's plan"),
    pytest.param({("train", "p00"): 2}, 0, id="nothing held there is wanted: no room at all"),
])
def test_the_room_of_a_full_pool_is_what_the_plans_hold_there(planned: dict[tuple[str, str], int] | None,
                                                                available: int) -> None:
    """The fleet simulation (issue 18): with the surplus's termination held by a tripped breaker, the planner
    gave a full pool's room held by one workload's surplus to another workload, whose launches were refused every
    pass until the partition's whole token budget went on them."""
    states = {st.pool_id: st for st in pool_states_for(FULL_P00, _ours("p00", 3, -timedelta(1)), set(), planned)}
    assert (states["p00"].excluded, states["p00"].available_instances) == (False, available)


@pytest.mark.parametrize(("planned", "available"), [
    pytest.param(None, 50 + 3, id="before any plan: the card's free room and everything we hold there"),
    pytest.param({("etl", "p00"): 3}, 50 + 3, id="what the plans hold there stays theirs"),
    pytest.param({("etl", "p00"): 1, ("train", "p00"): 2}, 50 + 1,
                 id="one workload's surplus there is not room for another's plan until it is terminated"),
    pytest.param({("train", "p00"): 2}, 50, id="nothing held there is wanted: only the card's free room"),
])
def test_the_room_of_any_reclaimable_pool_counts_what_we_hold_only_as_far_as_the_plans_want_it(
        planned: dict[tuple[str, str], int] | None, available: int) -> None:
    """The replay of seed 1 through the controller (expected-cost, one day): 83 launches refused for capacity, 39 of
    them into pools whose current card showed no room for them — the room was our own surplus, still running for
    the three idle passes before its termination, planned as room for another workload's new units. Counting what
    we hold only as far as the previous plans want it (as for full pools) took that day to 39 refusals."""
    states = {st.pool_id: st for st in pool_states_for(CARD, _ours("p00", 3, -timedelta(1)), set(), planned)}
    assert (states["p00"].excluded, states["p00"].available_instances) == (False, available)


def _two_passes(inputs: InputsInForce) -> tuple[Decision, Decision, str]:
    """Place ``etl`` and ``train``; then exclude the pool ``etl`` holds most in, with every instance running."""
    desired = Desired(ControllerSettings("r1", PARTITION), contracts(TRAIN, ETL))
    mem = acting(desired)
    work = demand(TRAIN, 40) + demand(ETL, 40)
    first = decide(Observation(Glance(1, False, 0, (), {}), {}, (), work, market(), {}, {}, 0), desired, mem, T0)
    halls = {p.pool_id: p.hall for p in POOLS}
    running = tuple(Observed(f"{a.launch.key.pool}-{a.launch.workload}-{n}", f"node-{n}", a.launch.workload,
                             a.launch.key.pool, PARTITION, first.generation, a.launch.key.purpose, "active",
                             halls[a.launch.key.pool], T0 - timedelta(hours=1))
                    for a in first.of(Place) for n in range(a.launch.count))
    held = sorted({o.pool for o in running if o.purpose is Purpose.RECLAIMABLE},
                  key=lambda pid: -sum(o.pool == pid for o in running))
    pool = held[0]
    rows = {o.instance_id: row(o, 3) for o in running}
    later = T0 + timedelta(minutes=5)
    inputs = InputsInForce({}, {}, {pool} if inputs.excluded else set(), set(), {pool} if inputs.full else set())
    glance = Glance(1, False, first.generation, running, rows)
    mem2, _ = begin(glance, desired, first.memory, later)
    second = decide(Observation(glance, rows, (), work, replace(market(), inputs=inputs), {}, {}, 0), desired, mem2,
                    later)
    return first, second, pool


def _units_in(d: Decision, pool: str) -> int:
    (plans,) = d.of(WritePlans)
    return sum(a.units for p in plans.plans.values() for a in p.allocations if a.pool_id == pool)


def test_through_the_controller_a_full_pool_keeps_its_running_units_and_gets_no_new_ones() -> None:
    """A pool excluded because launches were refused: nothing running there is terminated or moved, nothing new
    is launched there. On main the exclusion had no cause and made every unit held there surplus: the
    ``reclaim`` case below is what main did for a launch-failure exclusion too."""
    first, second, pool = _two_passes(InputsInForce({}, {}, set(), set(), {"x"}))
    assert _units_in(first, pool) > 0 and _units_in(second, pool) == _units_in(first, pool)
    assert not second.of(Terminate) and not second.of(Place)
    assert second.gated is not None and not second.gated.terminations and second.held == 0


def test_through_the_controller_a_pool_being_reclaimed_moves_its_units_away() -> None:
    first, second, pool = _two_passes(InputsInForce({}, {}, {"x"}, set()))
    assert _units_in(first, pool) > 0 and _units_in(second, pool) == 0
    moved = [p.launch for p in second.of(Place)]
    assert moved and pool not in {a.key.pool for a in moved}
    assert second.gated is not None and (second.gated.terminations or second.held), "its instances are surplus"


# --- a full pool has no depth until its room is seen again (the planner's score) ---------------------------

_SINCE = T0 - timedelta(minutes=2)   # the pool was excluded as full


@pytest.mark.parametrize(("score", "depth", "since", "card_at", "free_now", "expected"), [
    pytest.param(0.9, (0.8, 1.0), _SINCE, _SINCE - timedelta(minutes=3), 30, 0.58,
                 id="the ranking's card is older than the refusals: the score at zero depth"),
    pytest.param(0.9, (0.8, 0.5), _SINCE, _SINCE - timedelta(minutes=3), 30, 0.74,
                 id="the depth term taken off is the one the quota headroom scaled"),
    pytest.param(0.9, (0.8, 1.0), _SINCE, _SINCE + timedelta(minutes=1), 0, 0.58,
                 id="a card after the refusals without room: zero depth"),
    pytest.param(0.9, (0.8, 1.0), _SINCE, _SINCE + timedelta(minutes=1), 4, 0.9,
                 id="a card after the refusals shows room: the ranking's score stands"),
    pytest.param(0.9, (0.8, 1.0), None, _SINCE + timedelta(minutes=1), 4, 0.58,
                 id="when the pool was excluded is unknown, no card counts as after it"),
    pytest.param(0.9, None, _SINCE, _SINCE - timedelta(minutes=3), 30, 0.9,
                 id="a ranking without its depth input: its score stands"),
    pytest.param(None, (0.8, 1.0), _SINCE, _SINCE - timedelta(minutes=3), 30, None,
                 id="no ranking in force: nothing to lower"),
])
def test_the_score_the_planner_uses_for_a_full_pool(score: float | None, depth: tuple[float, float] | None,
                                                    since: datetime | None, card_at: datetime, free_now: int,
                                                    expected: float | None) -> None:
    got = full_pool_score(score, depth, full_since=since, card_at=card_at, free_now=free_now)
    assert got == (None if expected is None else pytest.approx(expected, abs=1e-6))


_SCORES = {p.pool_id: 0.6 for p in POOLS} | {"p00": 0.9}            # p00 ranks first on its depth
_DEPTH = {pid: (0.1, 1.0) for pid in _SCORES} | {"p00": (0.8, 1.0)}  # without it, it ranks last (0.58)


def _shrink(card_at: datetime) -> tuple[int, int]:
    """``etl`` (depth-first) placed on 40 units with p00 ranked first; then p00 is excluded as full, the rate card
    in force taken at ``card_at`` shows it with room, and the claim falls to 20: the units p00 keeps, before
    and after."""
    # the composite ranking's planner (depth-first): expected cost does not read the score a full pool changes
    desired = Desired(ControllerSettings("r1", PARTITION, planner=PlannerConfig(strategy=Strategy.DEPTH_FIRST)),
                      contracts(ETL))
    mem = acting(desired)
    mkt = replace(market(), free_at=card_at, inputs=InputsInForce(_SCORES, {}, set(), set(), depth=_DEPTH))
    first = decide(Observation(Glance(1, False, 0, (), {}), {}, (), demand(ETL, 40), mkt, {}, {}, 0), desired, mem,
                   T0)
    halls = {p.pool_id: p.hall for p in POOLS}
    running = tuple(Observed(f"{a.launch.key.pool}-{n}", f"node-{a.launch.key.pool}-{n}", a.launch.workload,
                             a.launch.key.pool, PARTITION, first.generation, a.launch.key.purpose, "active",
                             halls[a.launch.key.pool], T0 - timedelta(hours=1))
                    for a in first.of(Place) for n in range(a.launch.count))
    rows = {o.instance_id: row(o, 3) for o in running}
    later = T0 + timedelta(minutes=1)
    full = replace(mkt, inputs=InputsInForce(_SCORES, {}, set(), set(), {"p00"}, {"p00": _SINCE}, _DEPTH))
    glance = Glance(1, False, first.generation, running, rows)
    mem2, _ = begin(glance, desired, first.memory, later)
    second = decide(Observation(glance, rows, (), demand(ETL, 20), full, {}, {}, 0), desired, mem2, later)
    return _units_in(first, "p00"), _units_in(second, "p00")


def test_through_the_controller_a_full_pool_on_a_card_older_than_its_refusals_is_the_first_to_give_up_units() -> None:
    """The claim shrinks while p00 is full and the card in force predates the refusals: at zero depth p00 ranks
    last, so the re-plan keeps the units elsewhere and p00 keeps only what the spread needs (1 of its 6)."""
    before, after = _shrink(_SINCE - timedelta(minutes=3))
    assert (before, after) == (6, 1)


def test_through_the_controller_a_full_pool_whose_room_is_seen_again_keeps_its_rank() -> None:
    before, after = _shrink(_SINCE + timedelta(minutes=1))
    assert (before, after) == (6, 3)
