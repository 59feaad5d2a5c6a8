"""Table tests of the controller's pure decisions: diff, safety gate, exclusion reflex, fallback arbiter, claims."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from controllers.controller.breaker import Safety, SafetyConfig
from controllers.controller.claims import WorkItem, normalise, parse_contract_ref
from controllers.controller.claims_k8s import pod_item
from controllers.controller.claims_slurm import parse_sinfo_idle, parse_squeue
from controllers.controller.exclusion import ExclusionWatcher, Signal, pool_status
from controllers.controller.fallback import Approval, GuaranteedOption, Need, arbitrate
from controllers.controller.model import Launch, Observed, Purpose, SlotKey, Terminate
from controllers.controller.reconcile import diff
from testkit.builders import PARTITION, T0, contract, contracts


def obs(iid: str, pool: str = "p1", workload: str = "w", status: str = "active", purpose: Purpose = Purpose.RECLAIMABLE,
        age_s: int = 0) -> Observed:
    return Observed(iid, f"n-{iid}", workload, pool, PARTITION, 1, purpose, status, "h1", T0 + timedelta(seconds=age_s))


K = SlotKey("w", "p1", Purpose.RECLAIMABLE)


@pytest.mark.parametrize(("want", "have", "launch", "surplus"), [
    (3, ["active"], 2, 0), (1, ["active", "active", "active"], 0, 2), (2, ["active", "notified"], 1, 0),
    (2, ["active", "building"], 0, 0), (0, ["active"], 0, 1)])
def test_the_diff_launches_what_is_missing_counts_notified_as_leaving_and_marks_the_rest_surplus(
        want: int, have: list[str], launch: int, surplus: int) -> None:
    d = diff({K: want} if want else {}, [obs(f"i{n}", status=s, age_s=n) for n, s in enumerate(have)],
             partition=PARTITION, generation=4, tiers={"w": "T2"})
    assert d.launch_count == launch and len(d.surplus) == surplus
    if launch:
        assert d.launches[0].launch_key == f"{PARTITION}/w/p1/reclaimable/g4/{sum(s != 'notified' for s in have)}"
    if surplus:
        assert d.surplus[0].instance.instance_id == f"i{len(have) - 1}"  # newest first


def test_the_same_observation_gives_the_same_launch_key_so_a_repeated_pass_asks_for_the_same_thing() -> None:
    a = diff({K: 5}, [obs("i1")], partition=PARTITION, generation=2)
    b = diff({K: 5}, [obs("i1")], partition=PARTITION, generation=2)
    assert a == b and a.launches[0].count == 4


def test_instances_of_an_unknown_workload_are_orphans_and_other_partitions_are_ignored() -> None:
    other = Observed("x", "n-x", "w", "p1", "r1/other", 1, Purpose.RECLAIMABLE, "active")
    d = diff({}, [obs("i1", workload="ghost"), other], partition=PARTITION, generation=1, tiers={"w": "T1"})
    assert [(t.instance.instance_id, t.reason) for t in d.surplus] == [("i1", "orphan")]


def _term(iid: str, tier: str = "T3") -> Terminate:
    return Terminate(obs(iid), "surplus", tier)


def _ready(cfg: SafetyConfig | None = None) -> Safety:
    s = Safety(PARTITION, cfg or SafetyConfig(recovery_share=Decimal(1)))
    s.cycles, s.recovering = 2, False
    return s


def test_after_a_restart_two_passes_are_read_only_then_at_most_5_percent_per_5_minutes_tier_1_first() -> None:
    s = Safety(PARTITION)
    launches = [Launch(SlotKey("low", "p", Purpose.RECLAIMABLE), 30, PARTITION, 1, "T5"),
                Launch(SlotKey("high", "p", Purpose.FLOOR), 30, PARTITION, 1, "T1")]
    for _ in range(2):
        g = s.gate(launches, [], fleet_size=100, idle={}, agree={}, now=T0)
        assert g.read_only and not g.launches
        s.done(g, 0, 0, T0)
    g = s.gate(launches, [], fleet_size=100, idle={}, agree={}, now=T0)
    assert [(a.workload, a.count) for a in g.launches] == [("high", 5)]
    s.done(g, 5, 0, T0)
    g2 = s.gate(launches, [], fleet_size=100, idle={}, agree={}, now=T0 + timedelta(minutes=1))
    assert not g2.launches  # the 5-minute window is spent
    g3 = s.gate(launches, [], fleet_size=100, idle={}, agree={}, now=T0 + timedelta(minutes=5, seconds=1))
    assert sum(a.count for a in g3.launches) == 5


def test_terminations_need_three_idle_observations_and_tags_agreeing_with_the_row() -> None:
    s = _ready()
    cands = [_term("a"), _term("b"), _term("c")]
    g = s.gate([], cands, fleet_size=1000, idle={"a": 3, "b": 2, "c": 5}, agree={"a": True, "b": True, "c": False},
               now=T0)
    assert [t.instance.instance_id for t in g.terminations] == ["a"] and not s.tripped


def test_a_mass_termination_trips_the_breaker_and_nothing_is_terminated() -> None:
    s = _ready()
    cands = [_term(f"i{n}") for n in range(10)]
    ids = [f"i{n}" for n in range(10)]
    g = s.gate([], cands, fleet_size=100, idle=dict.fromkeys(ids, 3), agree=dict.fromkeys(ids, True), now=T0)
    assert not g.terminations and s.tripped and [n.kind for n in g.notes] == ["breaker-tripped"]
    g2 = s.gate([], cands[:1], fleet_size=100, idle={"i0": 3}, agree={"i0": True}, now=T0 + timedelta(hours=1))
    assert not g2.terminations  # stays open until an operator resets it


def test_two_percent_per_ten_minutes_is_allowed_and_more_waits_for_the_window_without_tripping() -> None:
    s = _ready()
    ids = {f"i{n}": 3 for n in range(2)}
    g = s.gate([], [_term(i) for i in ids], fleet_size=100, idle=ids, agree=dict.fromkeys(ids, True), now=T0)
    assert len(g.terminations) == 2 and not s.tripped
    s.done(g, 0, 2, T0)
    g = s.gate([], [_term("x")], fleet_size=100, idle={"x": 3}, agree={"x": True}, now=T0 + timedelta(minutes=5))
    assert not g.terminations and g.held_terminations == 1 and not s.tripped and not g.notes
    g = s.gate([], [_term("x")], fleet_size=100, idle={"x": 3}, agree={"x": True}, now=T0 + timedelta(minutes=10))
    assert [t.instance.instance_id for t in g.terminations] == ["x"]


@pytest.mark.parametrize(("fleet", "wanted", "per_window", "trips"), [
    (100, 9, [2, 2, 2, 2, 1], False),   # an ordinary surplus under 10 %: 2 a window until it is gone
    (100, 10, [], True),                # 10 % at once: a mass termination
    (1000, 50, [20, 20, 10], False),    # 5 % of a large partition: paced at 20 a window
    (1000, 100, [], True),
    (10, 1, [1], False),                # a small partition's cap is one a window
    (10, 2, [], True),                  # and two at once is already a fifth of it
])
def test_an_ordinary_surplus_is_paced_over_windows_and_a_mass_want_trips(
        fleet: int, wanted: int, per_window: list[int], trips: bool) -> None:
    s = _ready()
    left = [f"i{n}" for n in range(wanted)]
    done_per_window = []
    for window in range(8):
        now = T0 + timedelta(minutes=10 * window)
        g = s.gate([], [_term(i) for i in left], fleet_size=fleet, idle=dict.fromkeys(left, 3),
                   agree=dict.fromkeys(left, True), now=now)
        s.done(g, 0, len(g.terminations), now)
        gone = {t.instance.instance_id for t in g.terminations}
        left = [i for i in left if i not in gone]
        if gone:
            done_per_window.append(len(gone))
        if not left or s.tripped:
            break
    assert (done_per_window, s.tripped) == (per_window, trips)


def test_after_an_operator_resets_a_mass_trip_the_surplus_in_hand_is_paced_and_a_new_mass_want_trips_again(
        ) -> None:
    s = _ready()
    left = [f"i{n}" for n in range(12)]
    g = s.gate([], [_term(i) for i in left], fleet_size=100, idle=dict.fromkeys(left, 3),
               agree=dict.fromkeys(left, True), now=T0)
    assert s.tripped and not g.terminations
    s.reset()
    windows = 0
    while len(left) >= 10:  # the acknowledged surplus, 2 a window
        now = T0 + timedelta(minutes=10 * (windows + 1))
        g = s.gate([], [_term(i) for i in left], fleet_size=100, idle=dict.fromkeys(left, 3),
                   agree=dict.fromkeys(left, True), now=now)
        assert len(g.terminations) == 2 and not s.tripped
        s.done(g, 0, 2, now)
        left = left[2:]
        windows += 1
    now = T0 + timedelta(minutes=10 * (windows + 1))
    g = s.gate([], [_term(i) for i in left], fleet_size=100, idle=dict.fromkeys(left, 3),
               agree=dict.fromkeys(left, True), now=now)  # under 10 %: the acknowledgement is spent
    s.done(g, 0, len(g.terminations), now)
    more = [f"j{n}" for n in range(10)]
    g = s.gate([], [_term(i) for i in more], fleet_size=100, idle=dict.fromkeys(more, 3),
               agree=dict.fromkeys(more, True), now=now + timedelta(minutes=10))
    assert s.tripped and not g.terminations and [n.kind for n in g.notes] == ["breaker-tripped"]


def sig(kind: str, minute: float, pool: str = "p1", n: int = 0) -> Signal:
    return Signal(kind, pool, T0 + timedelta(minutes=minute), f"{kind}-{minute}-{n}")


def test_three_reclamation_waves_in_30_minutes_exclude_a_pool_with_the_evidence() -> None:
    w = ExclusionWatcher()
    assert w.observe(sig("notice", 0)) is None and w.observe(sig("notice", 0.5, n=1)) is None  # one wave
    assert w.observe(sig("notice", 10)) is None
    ex = w.observe(sig("no-notice-loss", 20))
    assert ex is not None and ex.offences == 1 and len(ex.evidence) == 4
    assert ex.until - ex.excluded_at == timedelta(hours=2) and ex.probation_until - ex.until == timedelta(hours=1)
    assert pool_status(ex, T0 + timedelta(hours=2, minutes=30)) == "probation"
    assert pool_status(ex, T0 + timedelta(hours=3, minutes=30)) == "ok"


def test_waves_further_apart_than_30_minutes_do_not_exclude() -> None:
    w = ExclusionWatcher()
    assert all(w.observe(sig("notice", m)) is None for m in (0, 20, 40, 60))


def test_a_repeat_offender_gets_double_the_cool_off_and_thrash_excludes_too() -> None:
    w = ExclusionWatcher(offences={"p1": 1})
    ex = None
    for m in (0, 1, 2):
        ex = w.observe(sig("launch-failed", m))
    assert ex is not None and ex.until - ex.excluded_at == timedelta(hours=4) and "thrash" in ex.reason


def need(**kw: object) -> Need:
    base = dict(workload="w", tier="T2", units_wanted=8, short_since=T0, breach=False, deadline_risk=False,
                spend_cap_eur=Decimal("100"), committed_eur=Decimal(0), approver="boss@example.org",
                options=(GuaranteedOption("g1", Decimal("1.00"), 2, 100),))
    base.update(kw)
    return Need(**base)  # type: ignore[arg-type]


def test_fallback_waits_five_minutes_of_shortfall_then_spends_within_the_cap() -> None:
    assert not arbitrate([need()], T0 + timedelta(minutes=4), launches_left=40).launches
    d = arbitrate([need(spend_cap_eur=Decimal("50"))], T0 + timedelta(minutes=5), launches_left=40)
    # 4 instances wanted at 24 EUR each over 24 h: the cap of 50 EUR buys 2; the rest goes to the approver
    assert [(x.count, x.amount_eur) for x in d.launches] == [(2, Decimal("48.000000"))]
    assert d.approvals and d.approvals[0].options[0]["option"] == "cover-all"


def test_without_an_answer_in_15_minutes_shortfall_is_recorded_and_nothing_spent() -> None:
    pending = Approval(T0, "pending")
    n = need(committed_eur=Decimal("100"), approval=pending, breach=True)
    assert not arbitrate([n], T0 + timedelta(minutes=14), launches_left=40).shortfalls
    d = arbitrate([n], T0 + timedelta(minutes=15), launches_left=40)
    assert d.shortfalls == (("w", 8, d.shortfalls[0][2]),) and not d.launches and not d.approvals


def test_fallback_launches_are_capped_per_minute_and_ordered_by_deadline_risk_then_tier() -> None:
    needs = [need(workload="t3", tier="T3", breach=True, units_wanted=60, spend_cap_eur=Decimal(10**6)),
             need(workload="t1", tier="T1", breach=True, units_wanted=60, spend_cap_eur=Decimal(10**6)),
             need(workload="dl", tier="T4", deadline_risk=True, units_wanted=20, spend_cap_eur=Decimal(10**6))]
    d = arbitrate(needs, T0, launches_left=40)
    assert [(x.workload, x.count) for x in d.launches] == [("dl", 10), ("t1", 30)]
    assert sum(x.count for x in d.launches) == 40 and d.held_by_rate > 0


def test_return_waits_an_hour_of_health_then_gives_back_20_percent_newest_first() -> None:
    running = tuple((f"f{n}", T0 + timedelta(minutes=n)) for n in range(10))
    healthy = need(units_wanted=0, fallback_running=running, healthy_since=T0)
    assert not arbitrate([healthy], T0 + timedelta(minutes=59), launches_left=40).returns
    d = arbitrate([healthy], T0 + timedelta(minutes=60), launches_left=40)
    assert [i for _, i in d.returns] == ["f9", "f8"]
    again = need(units_wanted=0, fallback_running=running, healthy_since=T0, last_return_at=T0 + timedelta(minutes=60))
    assert not arbitrate([again], T0 + timedelta(minutes=100), launches_left=40).returns


def test_claims_are_normalised_to_contract_units_and_unknown_contracts_are_refused() -> None:
    c = contract("etl", vcpu=4, mem=16)
    items = [WorkItem("slurm", "1", c.ref, 8, 8, "pending"), WorkItem("slurm", "2", c.ref, 1, 1, "running"),
             WorkItem("slurm", "3", "nope@1", 4, 4, "pending"), WorkItem("slurm", "4", None, 4, 4, "pending")]
    n = normalise(items, contracts(c))
    assert [(cl.workload, cl.units) for cl in n.claims] == [("etl", 3)]
    assert [(i.item_id, note.kind) for i, note in n.refusals] == [("3", "claim-refused"), ("4", "claim-refused")]
    assert "not in force" in n.refusals[0][1].cause and "--comment" in n.refusals[1][1].cause


@pytest.mark.parametrize(("text", "ref"), [("contract=etl@3", "etl@3"), ("x; contract=a-b@12", "a-b@12"),
                                           ("contract=etl", None), (None, None), ("contract=Etl@1", None)])
def test_contract_references_are_parsed_from_comments(text: str | None, ref: str | None) -> None:
    assert parse_contract_ref(text) == ref


def test_squeue_and_sinfo_json_are_parsed() -> None:
    doc = {"jobs": [
        {"job_id": 8, "job_state": "PENDING", "partition": "reclaimable", "comment": "contract=demo@1",
         "tres_req_str": "cpu=2,mem=4G,node=1", "cpus": 2, "nodes": ""},
        {"job_id": 9, "job_state": "RUNNING", "partition": "reclaimable", "comment": "", "tres_req_str": "cpu=1,mem=1M",
         "nodes": "node2"},
        {"job_id": 10, "job_state": "PENDING", "partition": "guaranteed", "comment": "contract=demo@1"},
        {"job_id": 11, "job_state": "COMPLETED", "partition": "reclaimable", "comment": "contract=demo@1"}]}
    items = parse_squeue(doc, ["reclaimable"])
    assert [(i.item_id, i.contract_ref, i.vcpu, i.memory_gib, i.state, i.node) for i in items] == [
        ("8", "demo@1", 2.0, 4.0, "pending", ""), ("9", None, 1.0, 1 / 1024, "running", "node2")]
    nodes = {"nodes": [{"name": "node1", "state": "idle"}, {"name": "node2", "state": "allocated"},
                       {"name": "node3", "state": ["IDLE"], "state_flags": ["DRAIN"]}]}
    assert parse_sinfo_idle(nodes) == {"node1", "node3"}


def test_pods_that_tolerate_the_reclaimable_taint_are_work_items() -> None:
    pod: dict[str, Any] = {"metadata": {"name": "p", "namespace": "ns", "labels": {"sco.io/contract": "etl",
                                                                   "sco.io/contract-version": "2"}},
           "spec": {"tolerations": [{"key": "sco.io/reclaimable", "operator": "Exists"}],
                    "containers": [{"resources": {"requests": {"cpu": "1500m", "memory": "2Gi"}}}]},
           "status": {"phase": "Pending"}}
    item = pod_item(pod)
    assert item is not None and (item.contract_ref, item.vcpu, item.memory_gib) == ("etl@2", 1.5, 2.0)
    assert pod_item({**pod, "spec": {**pod["spec"], "tolerations": []}}) is None


def test_a_contract_without_fallback_never_falls_back_and_on_breach_contracts_only_on_a_breach() -> None:
    late = T0 + timedelta(minutes=30)
    assert not arbitrate([need(policy="none", breach=True)], late, launches_left=40).launches
    assert not arbitrate([need(policy="on-breach-within-cap")], late, launches_left=40).launches
    assert arbitrate([need(policy="on-breach-within-cap", breach=True)], late, launches_left=40).launches
