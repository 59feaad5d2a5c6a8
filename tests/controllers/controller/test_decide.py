"""Table tests for the pure pass (``decide.begin``, ``decide.decide``, ``fallback_pass.decide_fallback``) and for
``apply`` under the token budget: no database, no provider process — hand-built observations on a fixed clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from contracts.provider import LaunchRequest, OwnerTags
from contracts.schema import Contract
from controllers.controller.apply import Actuator
from controllers.controller.budget import BudgetedProvider
from controllers.controller.claims import WorkItem
from controllers.controller.decide import begin, decide
from controllers.controller.decision import (
    AskApproval,
    Decision,
    Desired,
    Memory,
    OpenBreaker,
    Place,
    RecordShortfall,
    Revoke,
    StartFallback,
)
from controllers.controller.fallback import Approval, GuaranteedOption, Need
from controllers.controller.fallback_pass import decide_fallback
from controllers.controller.model import (
    Glance,
    Gone,
    InputsInForce,
    Launch,
    Market,
    Observation,
    Observed,
    Purpose,
    SlotKey,
    Terminate,
)
from controllers.controller.revocation import RecordingRevoker
from controllers.controller.settings import ControllerSettings
from controllers.providers.budget import TokenBucket
from controllers.simregion.config import RegionConfig
from controllers.simregion.region import SimulatedRegion
from testkit.builders import PARTITION, T0, contract, contracts
from tests.controllers.builders import pool
from tests.controllers.controller.helpers import StepClock

POOLS = ([pool(f"p{i:02d}", hall=f"h{i % 3 + 1}") for i in range(12)]
         + [pool(f"c{i}", hall=f"h{i + 1}", model="committed", bu="research") for i in range(3)]
         + [pool("g1", hall="h1", model="guaranteed")])
TRAIN = contract("train", "T1", floor_pct=30)
ETL = contract("etl", "T3")


def market(free: int = 50, committed: int = 20) -> Market:
    return Market({p.pool_id: p for p in POOLS},
                  {p.pool_id: free for p in POOLS if p.purchase_model.value == "reclaimable"},
                  {p.pool_id: committed for p in POOLS if p.purchase_model.value == "committed"}, 100,
                  InputsInForce({}, {}, set(), set()))


def demand(c: Contract, n: int) -> tuple[WorkItem, ...]:
    return tuple(WorkItem("slurm", f"{c.workload}-{i}", c.ref, 4, 16, "pending") for i in range(n))


def acting(desired: Desired, glance: Glance | None = None) -> Memory:
    """A leader's memory past its read-only cycles, after ``begin`` on a first look (default: holding nothing)."""
    memory = Memory.fresh(desired.settings)
    memory.safety.cycles, memory.tenure = 2, 1
    mem, _ = begin(glance or Glance(1, False, 0, (), {}), desired, memory, T0)
    return mem


def orphan(n: int) -> Observed:
    return Observed(f"o{n}", f"node-o{n}", "gone-workload", "p00", PARTITION, 1, Purpose.RECLAIMABLE, "active", "h1",
                    T0 - timedelta(hours=1))


def row(o: Observed, idle: int, state: str = "running") -> dict[str, Any]:
    return {"workload": o.workload, "pool": o.pool, "partition": o.partition, "generation": o.generation,
            "state": state, "idle": idle, "purpose": str(o.purpose)}


@dataclass(frozen=True)
class Case:
    """One pass: what the leader remembers, what the glance sees, what the scheduler asks for."""

    cycles: int = 2                 # passes already done in this tenure
    recovering: bool = False
    tenure: int = 1                 # the lease generation this pass holds (the memory holds 1)
    breaker_open: bool = False
    generation: int = 1             # the newest plan generation in the database (0: the partition never planned)
    orphans: int = 0                # instances of no workload in force: termination candidates
    idle: int = 3                   # idle observations of each orphan
    work: tuple[WorkItem, ...] = field(default_factory=lambda: demand(ETL, 40))
    settings: dict[str, Any] = field(default_factory=dict)

    def run(self) -> Decision:
        desired = Desired(ControllerSettings("r1", PARTITION, **self.settings), contracts(TRAIN, ETL))
        memory = Memory.fresh(desired.settings)
        memory.safety.cycles, memory.safety.recovering, memory.tenure = self.cycles, self.recovering, 1
        instances = tuple(orphan(n) for n in range(self.orphans))
        rows = {o.instance_id: row(o, self.idle) for o in instances}
        glance = Glance(self.tenure, self.breaker_open, self.generation, instances, rows)
        mem, hold = begin(glance, desired, memory, T0)
        assert hold is None
        return decide(Observation(glance, rows, (), self.work, market(), {}, {}, 0), desired, mem, T0)


def launched(d: Decision) -> int:
    return sum(p.launch.count for p in d.of(Place))


@pytest.mark.parametrize(("case", "read_only"), [
    pytest.param(Case(cycles=0), True, id="the first pass after a restart only reads and holds every launch"),
    pytest.param(Case(cycles=1), True, id="the second pass after a restart still only reads"),
    pytest.param(Case(cycles=2), False, id="the third pass after a restart acts"),
    pytest.param(Case(cycles=5, tenure=2), True, id="a lease lost and taken back is a restart: read-only again"),
])
def test_a_restarted_leader_only_reads_for_two_passes(case: Case, read_only: bool) -> None:
    d = case.run()
    assert d.read_only is read_only
    assert (launched(d) == 0) is read_only and not d.of(StartFallback)
    assert (d.held > 0) is read_only


def test_the_floor_goes_first_onto_committed_reservations_over_three_halls_and_tier_1_before_tier_3() -> None:
    full = Case(work=demand(TRAIN, 40) + demand(ETL, 40)).run()
    floor = [p.launch for p in full.of(Place) if p.launch.key.purpose is Purpose.FLOOR]
    pools = {p.pool_id: p for p in POOLS}
    assert floor and all(pools[a.key.pool].purchase_model.value == "committed" for a in floor)
    assert len({pools[a.key.pool].hall for a in floor}) >= 3
    recovering = Case(recovering=True, work=demand(TRAIN, 40) + demand(ETL, 40)).run()
    allowed = recovering.of(Place)
    assert allowed and all(p.launch.workload == "train" for p in allowed), "tier 1 first under the recovery cap"
    assert 0 < launched(recovering) <= 5 and recovering.held > 0


@pytest.mark.parametrize(("generation", "capped"), [
    pytest.param(3, True, id="a restart of a partition that planned before ramps up at 5 % per 5 minutes"),
    pytest.param(0, False, id="a partition's first placement (never planned, holds nothing) is not ramped"),
])
def test_the_recovery_ramp_bounds_a_restart_not_a_first_placement(generation: int, capped: bool) -> None:
    desired = Desired(ControllerSettings("r1", PARTITION), contracts(TRAIN, ETL))
    memory = Memory.fresh(desired.settings)
    glance = Glance(1, False, generation, (), {})
    work = demand(TRAIN, 40) + demand(ETL, 40)
    for _ in range(3):  # two read-only passes, then the first that acts (apply records each pass as done)
        mem, _ = begin(glance, desired, memory, T0)
        d = decide(Observation(glance, {}, (), work, market(), {}, {}, 0), desired, mem, T0)
        assert d.gated is not None
        d.memory.safety.done(d.gated, launched(d), 0, T0)
        memory = d.memory
    assert not d.read_only
    assert (launched(d) <= 5) is capped and (d.held > 0) is capped, (launched(d), d.held)


def first_pass_places(names: list[str], held: tuple[str, ...] = ()) -> list[str]:
    """The workloads of a pass's launches in call order: seven T3 workloads of 24 units each (and a T1 one),
    ``held`` already holding one running instance each."""
    many = [contract(n, "T1" if n == "w9" else "T3") for n in names]
    desired = Desired(ControllerSettings("r1", PARTITION), contracts(*many))
    memory = Memory.fresh(desired.settings)
    memory.safety.cycles, memory.safety.recovering, memory.tenure = 2, False, 1
    running = tuple(Observed(f"i-{w}", f"node-{w}", w, "p00", PARTITION, 1, Purpose.RECLAIMABLE, "active", "h1",
                             T0 - timedelta(minutes=1)) for w in held)
    glance = Glance(1, False, 1, running, {o.instance_id: row(o, 0) for o in running})
    mem, _ = begin(glance, desired, memory, T0)
    work = tuple(item for c in many for item in demand(c, 24))
    d = decide(Observation(glance, glance.rows, (), work, market(), {}, {}, 0), desired, mem, T0)
    return [p.launch.workload for p in d.of(Place)]


def test_each_workload_s_first_launch_comes_before_any_workload_s_second_so_the_token_budget_delays_none() -> None:
    names = [f"w{i}" for i in range(7)]
    order = first_pass_places(names)
    assert len(order) > len(names), "several slots per workload, else the order says nothing"
    assert sorted(order[:len(names)]) == names, f"the first {len(names)} calls of the pass: {order}"


def test_the_next_pass_serves_first_the_workloads_the_token_budget_left_without_an_instance() -> None:
    names = [f"w{i}" for i in range(7)]
    order = first_pass_places(names, held=("w0", "w1", "w2", "w3", "w4"))
    assert order[:2] == ["w5", "w6"], order
    assert first_pass_places([*names, "w9"])[0] == "w9", "within a round tier 1 goes first"


@pytest.mark.parametrize(("case", "terminated", "breaker"), [
    pytest.param(Case(orphans=1, work=()), 1, False,
                 id="an orphan idle three times whose tags agree with its row is terminated"),
    pytest.param(Case(orphans=1, work=(), breaker_open=True), 0, False,
                 id="with the breaker open nothing is terminated"),
    pytest.param(Case(orphans=1, work=(), idle=2), 0, False, id="an orphan seen idle only twice is kept"),
    pytest.param(Case(orphans=5, work=()), 0, True,
                 id="more than 2 % of the partition in 10 minutes opens the breaker instead"),
])
def test_terminations_pass_the_breaker_and_the_idle_rule(case: Case, terminated: int, breaker: bool) -> None:
    d = case.run()
    assert len(d.of(Terminate)) == terminated
    assert bool(d.of(OpenBreaker)) is breaker and ("breaker-tripped" in d.kinds) is breaker
    assert d.held == case.orphans - terminated


def test_a_mass_loss_holds_the_pass_and_raises_the_alarm_once() -> None:
    desired = Desired(ControllerSettings("r1", PARTITION), contracts(ETL))
    running = [orphan(n) for n in range(10)]
    rows = {o.instance_id: row(o, 0) for o in running}
    _, hold = begin(Glance(1, False, 0, (), rows), desired, Memory.fresh(desired.settings), T0)
    assert hold is not None and hold.read_only and hold.held == 10 and hold.kinds == ("breaker-tripped",)
    assert hold.of(OpenBreaker) and hold.memory.safety.tripped
    _, again = begin(Glance(1, True, 0, (), rows), desired, hold.memory, T0 + timedelta(seconds=5))
    assert again is not None and not again.actions, "the alarm is raised once"
    _, agreed = begin(Glance(1, True, 0, tuple(running), rows), desired, hold.memory, T0)
    assert agreed is None


def test_decide_leaves_the_memory_it_was_given_unchanged() -> None:
    desired = Desired(ControllerSettings("r1", PARTITION), contracts(ETL))
    memory = Memory.fresh(desired.settings)
    glance = Glance(1, False, 0, (), {})
    mem, _ = begin(glance, desired, memory, T0)
    d = decide(Observation(glance, {}, (), demand(ETL, 40), market(), {}, {}, 0), desired, mem, T0)
    assert memory.previous is None and mem.previous is not None and mem.previous.plans == {}
    assert d.memory.previous is not None and "etl" in d.memory.previous.plans


# --- the fallback arbiter's decision ----------------------------------------------------------------------
def need(**kw: Any) -> Need:
    fields: dict[str, Any] = dict(
        workload="etl", tier="T3", units_wanted=8, short_since=T0, breach=False, deadline_risk=False,
        spend_cap_eur=Decimal(100), committed_eur=Decimal(0), approver="boss@example.org",
        options=(GuaranteedOption("g1", Decimal("1.00"), 2, 100),))
    fields.update(kw)
    return Need(**fields)


FB = Desired(ControllerSettings("r1", PARTITION), contracts(contract("etl", "T2")))


@pytest.mark.parametrize(("n", "minutes", "kinds"), [
    pytest.param(need(), 4, [], id="short for less than five minutes: nothing yet"),
    pytest.param(need(), 6, [StartFallback],
                 id="five minutes short within the cap: guaranteed capacity is launched, its cost reserved first"),
    pytest.param(need(spend_cap_eur=Decimal(50)), 6, [StartFallback, AskApproval],
                 id="over the cap: what the cap buys is launched and the approver is asked for the rest"),
    pytest.param(need(spend_cap_eur=Decimal(10)), 6, [AskApproval], id="a cap that buys nothing: only the request"),
    pytest.param(need(committed_eur=Decimal(100), approval=Approval(T0, "pending")), 14, [],
                 id="an approval pending for 14 minutes: nothing spent, nobody asked again"),
    pytest.param(need(committed_eur=Decimal(100), approval=Approval(T0, "pending")), 15, [RecordShortfall],
                 id="no answer within 15 minutes: shortfall recorded and nothing more spent"),
    pytest.param(need(spend_cap_eur=Decimal(50), approval=Approval(T0, "granted", Decimal(200))), 6, [StartFallback],
                 id="an approval granted raises the cap"),
])
def test_the_fallback_decision_spends_within_the_cap_asks_beyond_it_and_records_shortfall(
        n: Need, minutes: int, kinds: list[type]) -> None:
    memory = Memory.fresh(FB.settings)
    fb = decide_fallback([n], (), FB, memory, T0 + timedelta(minutes=minutes), generation=3, launched_last_minute=0,
                         dry=False)
    assert [type(a) for a in fb.actions] == kinds
    granted = n.approval.granted_eur if n.approval else Decimal(0)
    spent = sum((a.launch.amount_eur for a in fb.actions if isinstance(a, StartFallback)), Decimal(0))
    assert spent <= n.spend_cap_eur + granted - n.committed_eur


def test_a_read_only_pass_decides_fallback_but_acts_on_nothing() -> None:
    fb = decide_fallback([need(spend_cap_eur=Decimal(50))], (), FB, Memory.fresh(FB.settings),
                         T0 + timedelta(minutes=6), generation=3, launched_last_minute=0, dry=True)
    assert fb.decisions.launches and fb.decisions.approvals and not fb.actions and not fb.returns


def test_the_region_s_40_launches_a_minute_hold_back_the_rest() -> None:
    fb = decide_fallback([need(units_wanted=200, spend_cap_eur=Decimal(10**6))], (), FB, Memory.fresh(FB.settings),
                         T0 + timedelta(minutes=6), generation=3, launched_last_minute=30, dry=False)
    assert [a.launch.count for a in fb.actions if isinstance(a, StartFallback)] == [10]
    assert fb.decisions.held_by_rate > 0


def test_a_plan_short_for_five_minutes_becomes_a_fallback_launch_and_a_younger_one_a_requeue() -> None:
    t4 = contract("etl", "T4")  # automatic fallback within the cap
    desired = Desired(ControllerSettings("r1", PARTITION), contracts(t4))
    glance = Glance(1, False, 0, (), {})
    seen = Observation(glance, {}, (), demand(t4, 40), market(free=0, committed=0), {}, {}, 0)
    for short_for, fallback, requeue in ((timedelta(minutes=6), True, None),
                                         (timedelta(minutes=1), False, timedelta(minutes=4))):
        memory = Memory.fresh(desired.settings)
        memory.safety.cycles, memory.safety.recovering, memory.tenure = 2, False, 1
        memory.short_since["etl"] = T0 - short_for
        mem, _ = begin(glance, desired, memory, T0)
        d = decide(seen, desired, mem, T0)
        starts = [a for a in d.of(StartFallback) if a.launch.workload == "etl"]
        assert bool(starts) is fallback and d.requeue_after == requeue
        assert sum((a.launch.amount_eur for a in starts), Decimal(0)) <= t4.spend_cap_24h_eur


# --- apply: the token budget and idempotency --------------------------------------------------------------
class Recorder:
    """Stands in for the store: records each call by name."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self.calls.append(name)


@dataclass
class World:
    region: SimulatedRegion
    provider: Any
    store: Recorder

    def actuator(self) -> Actuator:
        desired = Desired(ControllerSettings("r1", PARTITION), contracts(ETL))
        return Actuator(desired, self.provider, self.store, None, RecordingRevoker())  # type: ignore[arg-type]

    def place(self, n: int, key: str) -> Place:
        pid = next(p.pool_id for p in self.region.catalogue().pools if p.purchase_model.value == "reclaimable")
        return Place(Launch(SlotKey("etl", pid, Purpose.RECLAIMABLE), n, PARTITION, 1, "T3", "plan", key))


def world(tokens: float) -> World:
    clock = StepClock()
    region = SimulatedRegion(RegionConfig(reclaim_rate_pct_h=0.0, hall_reclaims_per_30d=0.0,
                                          bursts_per_aggregate_day=0.0, seed=5), clock)
    bucket = TokenBucket(1.0, burst=tokens, monotonic=lambda: clock.now().timestamp())
    return World(region, BudgetedProvider(region, bucket), Recorder())


def decision(*actions: Any) -> Decision:
    memory = Memory.fresh(ControllerSettings("r1", PARTITION))
    return Decision(tuple(actions), memory, False, 1, 0)


@pytest.mark.parametrize(("tokens", "launched", "throttled"), [
    pytest.param(10, 6, False, id="with tokens to spare every launch and termination is made"),
    pytest.param(2, 3, True, id="two tokens make two calls: the rest waits for the next pass"),
    pytest.param(0, 0, True, id="an empty bucket makes no mutating call at all"),
])
def test_apply_never_spends_more_than_the_token_budget(tokens: int, launched: int, throttled: bool) -> None:
    w = world(tokens)
    act = w.actuator()
    victim = w.region.launch(_request(w))[0]
    gone = Terminate(Observed(victim.instance_id, victim.name, "etl", victim.pool_id or "", PARTITION, 1,
                              Purpose.RECLAIMABLE, "active"), "surplus")
    report = act.apply(decision(w.place(1, "a"), w.place(2, "b"), w.place(3, "c"), gone), T0)
    assert report.launched == launched and report.throttled is throttled
    assert w.provider.bucket.spent <= tokens
    assert report.terminated == (0 if throttled else 1)


def test_apply_acts_once_per_launch_key() -> None:
    w = world(10)
    report = w.actuator().apply(decision(w.place(2, "same"), w.place(2, "same")), T0)
    assert report.launched == 2 and w.provider.bucket.spent == 1 and w.store.calls.count("launched") == 1


def _request(w: World) -> LaunchRequest:
    pid = w.place(1, "seed").launch.key.pool
    return LaunchRequest(pool_id=pid, count=1, owner=OwnerTags(workload="etl", pool=pid, partition=PARTITION,
                                                               generation=1), metadata={})


LOSSY = contract("lossy", "T2", checkpoint={"mode": "periodic", "interval_min": 60})


@pytest.mark.parametrize(("was", "charged"), [
    pytest.param("running", True, id="an instance gone while running lost its work since the last checkpoint"),
    pytest.param("draining", False, id="an instance gone after its notice was drained by the agent: no charge here"),
])
def test_a_loss_without_notice_is_published_with_the_wasted_work_from_launch_time_and_interval(
        was: str, charged: bool) -> None:
    desired = Desired(ControllerSettings("r1", PARTITION), contracts(LOSSY))
    glance = Glance(1, False, 0, (), {})
    mem = acting(desired)
    gone = (Gone("i-9", "lossy", "p03", was, T0 - timedelta(minutes=95)),)
    d = decide(Observation(glance, {}, gone, (), market(), {}, {}, 0), desired, mem, T0)
    lost = [n for n in d.notes if n.kind == "lost"]
    assert [a.instance_id for a in d.of(Revoke)] == ["i-9"]  # revoked either way (ADR-31)
    if not charged:
        assert lost == []
        return
    (note,) = lost
    # 95 min after launch with a 60-min periodic checkpoint: 35 min since the last one
    assert (note.workload, note.pool, note.instance, note.cause) == ("lossy", "p03", "i-9", "reclaimed-no-notice")
    assert note.attributes["wasted_s"] == 35 * 60


CARD_AT = T0 - timedelta(minutes=2)


def _ours(pid: str, status: str, launched: timedelta) -> Observed:
    return Observed(f"{pid}-{status}-{launched}", "node", "etl", pid, PARTITION, 1, Purpose.RECLAIMABLE, status, "h1",
                    CARD_AT + launched)


@pytest.mark.parametrize(("pid", "instances", "free_at", "available"), [
    pytest.param("p00", [("active", -60), ("active", -30)], CARD_AT, 50 + 2,
                 id="ours launched before the card: free on the card plus ours"),
    pytest.param("p00", [("active", -60), ("active", 30), ("building", 60)], CARD_AT, 50 + 1,
                 id="ours launched after the card count once: the card still counts their room as free"),
    pytest.param("p00", [("active", 0)], CARD_AT, 50,
                 id="a launch in the card's instant counts as after it (one too few, never one too many)"),
    pytest.param("p00", [("active", -60), ("notified", -90)], CARD_AT, 50 + 1,
                 id="a notified instance never counts: its room goes with it"),
    pytest.param("p00", [("active", 30), ("active", 60)], None, 50 + 2,
                 id="a free figure without a time is taken as now: every live instance of ours counts"),
    pytest.param("c0", [("active", 30), ("active", 60)], CARD_AT, 20 + 2,
                 id="reservations are read live: every instance of ours on them counts"),
])
def test_the_planner_sees_each_pools_room_once_whatever_the_age_of_the_rate_card(
        pid: str, instances: list[tuple[str, int]], free_at: Any, available: int) -> None:
    from dataclasses import replace as with_

    from controllers.controller.decide import pool_states_for

    observed = [_ours(pid, status, timedelta(seconds=s)) for status, s in instances]
    states = {st.pool_id: st for st in pool_states_for(with_(market(), free_at=free_at), observed, set())}
    assert states[pid].available_instances == available


def test_a_lost_instance_whose_pool_others_filled_is_placed_elsewhere_not_relaunched_into_the_full_pool() -> None:
    """Kept plans follow the room (issue 19): the pool now gives one instance less than the plan holds there
    (free 0 on a card newer than our launches), so the plan keeps what the pool still holds and places the lost
    unit in another pool; relaunched into the full pool it failed every pass until the pool was excluded."""
    from dataclasses import replace as with_

    desired = Desired(ControllerSettings("r1", PARTITION), contracts(TRAIN, ETL))
    glance = Glance(1, False, 0, (), {})
    mem = acting(desired)
    work = demand(ETL, 40)
    first = decide(Observation(glance, {}, (), work, market(), {}, {}, 0), desired, mem, T0)
    halls = {p.pool_id: p.hall for p in POOLS}
    running = [Observed(f"{a.launch.key.pool}-{n}", f"node-{a.launch.key.pool}-{n}", a.launch.workload,
                        a.launch.key.pool, PARTITION, first.generation, a.launch.key.purpose, "active",
                        halls[a.launch.key.pool], T0 - timedelta(hours=1))
               for a in first.of(Place) for n in range(a.launch.count)]
    etl = sorted({o.pool for o in running if o.workload == "etl" and o.purpose is Purpose.RECLAIMABLE})
    full = etl[0]
    lost = next(o for o in running if o.pool == full and o.workload == "etl")
    still = tuple(o for o in running if o is not lost)
    card = market()
    filled = with_(card, free={**card.free, full: 0}, free_at=T0)   # other tenants took the pool's room
    later = T0 + timedelta(minutes=1)
    glance2 = Glance(1, False, first.generation, still, {})
    mem2, _ = begin(glance2, desired, first.memory, later)
    second = decide(Observation(glance2, {}, (), work, filled, {}, {}, 0), desired, mem2, later)
    placed = [(a.launch.key.pool, a.launch.count) for a in second.of(Place) if a.launch.workload == "etl"]
    assert full not in {pid for pid, _ in placed}
    assert sum(n for _, n in placed) == 1 and not second.of(Terminate)
