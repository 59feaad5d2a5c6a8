"""The drain's decisions as tables (agent/drain/plan.py): pure functions, no clock, no scheduler, no sleep."""

from __future__ import annotations

from typing import Any

import pytest

from agent.drain.plan import (
    FINISH_MARGIN_S,
    RETRY_S,
    Action,
    LocalStep,
    Outcome,
    call_outcome,
    decide,
    drain_deadline,
    eviction_grace_s,
    fallback_contract,
    local_step,
    order_workloads,
    overran,
    plan_drain,
    verify_settled,
)
from agent.model import Contract, Unit
from tests.agent.helpers import workload_entry


def contract(name: str, budget: int, **kw: Any) -> Contract:
    return Contract.from_entry(f"{name}@1", workload_entry(name, budget=budget, **kw))


def case(id_: str, *values: Any) -> Any:
    return pytest.param(*values, id=id_)


@pytest.mark.parametrize(("elapsed", "failed", "expected"), [
    case("a call answered in 100 ms is answered", 0.1, False, Outcome.ANSWERED),
    case("a call answered in exactly 800 ms is still answered", 0.8, False, Outcome.ANSWERED),
    case("a call answered in 900 ms is slow", 0.9, False, Outcome.SLOW),
    case("a call with no answer when the timeout fired is slow", None, False, Outcome.SLOW),
    case("a call that raised is failed however fast it was", 0.01, True, Outcome.FAILED),
])
def test_a_scheduler_call_is_classified_by_the_800_ms_rule(elapsed: float | None, failed: bool,
                                                            expected: Outcome) -> None:
    assert call_outcome(elapsed, failed) is expected


DEADLINE = 100.0  # a workload's deadline on the monotonic clock; the finish margin starts at 99.0


@pytest.mark.parametrize(("outcome", "advisory", "now", "expected"), [
    case("an answer continues through the scheduler", Outcome.ANSWERED, False, 50.0, Action.CONTINUE),
    case("an answer continues an advisory drain too", Outcome.ANSWERED, True, 50.0, Action.CONTINUE),
    case("a slow scheduler sends a hard notice's drain local", Outcome.SLOW, False, 0.0, Action.GO_LOCAL),
    case("a failed scheduler call sends a hard notice's drain local", Outcome.FAILED, False, 0.0, Action.GO_LOCAL),
    case("a slow scheduler defers an advisory drain", Outcome.SLOW, True, 0.0, Action.DEFER),
    case("a failed scheduler call defers an advisory drain", Outcome.FAILED, True, 0.0, Action.DEFER),
    case("a refusal well before the deadline is retried", Outcome.REFUSED, False, 50.0, Action.RETRY),
    case("a refusal whose retry ends exactly at the finish margin is retried", Outcome.REFUSED, False,
         DEADLINE - FINISH_MARGIN_S - RETRY_S, Action.RETRY),
    case("a refusal whose retry would end inside the finish margin goes local", Outcome.REFUSED, False,
         DEADLINE - FINISH_MARGIN_S - RETRY_S + 0.01, Action.GO_LOCAL),
    case("a refusal past the deadline goes local", Outcome.REFUSED, False, DEADLINE + 5, Action.GO_LOCAL),
    case("a refusal that outlasts an advisory drain's budget defers it", Outcome.REFUSED, True, 99.5, Action.DEFER),
    case("an advisory refusal well before the deadline is retried", Outcome.REFUSED, True, 10.0, Action.RETRY),
])
def test_the_decision_table_after_a_scheduler_call(outcome: Outcome, advisory: bool, now: float,
                                                   expected: Action) -> None:
    assert decide(outcome, advisory=advisory, now=now, deadline=DEADLINE) is expected


@pytest.mark.parametrize(("budget", "terminate_in", "expected"), [
    case("without a provider window the deadline is receipt plus the budget", 30, None, 1030.0),
    case("a provider window shorter than the budget caps the deadline", 30, 12.5, 1012.5),
    case("a provider window longer than the budget changes nothing", 30, 120.0, 1030.0),
    case("a provider window already past makes the deadline the receipt", 30, -4.0, 1000.0),
])
def test_a_workloads_deadline(budget: int, terminate_in: float | None, expected: float) -> None:
    assert drain_deadline(1000.0, budget, terminate_in) == expected


@pytest.mark.parametrize(("budget", "terminate_in", "now", "expected"), [
    case("the first eviction gets the whole seconds left, budget minus one in practice", 30, None, 0.001, 29),
    case("an eviction sent at the receipt gets the whole budget", 30, None, 0.0, 30),
    case("an eviction after ten seconds of retries gets what is left", 30, None, 10.4, 19),
    case("an eviction at the deadline still gets one second", 30, None, 30.0, 1),
    case("an eviction past the deadline still gets one second", 30, None, 45.0, 1),
    case("a provider window shorter than the budget bounds the grace", 30, 10.0, 0.0, 10),
])
def test_the_eviction_grace_is_what_is_left_of_the_budget(budget: int, terminate_in: float | None, now: float,
                                                          expected: int) -> None:
    assert eviction_grace_s(budget, drain_deadline(0.0, budget, terminate_in), now) == expected


@pytest.mark.parametrize(("stage", "now", "expected"), [
    case("before the finish margin the local path waits", 0, 98.9, LocalStep.WAIT),
    case("at the finish margin the local path finishes what is left", 0, 99.0, LocalStep.FINISH),
    case("a first finish late at the deadline is a finish, not an escalation", 0, 100.0, LocalStep.FINISH),
    case("after the finish and before the deadline the local path waits", 1, 99.5, LocalStep.WAIT),
    case("at the deadline the local path escalates", 1, 100.0, LocalStep.ESCALATE),
    case("after the escalation nothing more is sent", 2, 150.0, LocalStep.DONE),
])
def test_the_local_path_finishes_at_the_margin_and_escalates_at_the_deadline(stage: int, now: float,
                                                                             expected: LocalStep) -> None:
    assert local_step(stage, now, DEADLINE) is expected


@pytest.mark.parametrize(("remaining", "now", "settled", "overrun"), [
    case("no unit left settles the drain as drained", 0, 10.0, True, False),
    case("an unknown count settles the drain, unverified and not an overrun", None, 10.0, True, False),
    case("units left before the deadline keep verifying", 2, 99.9, False, True),
    case("units left at the deadline settle the drain as an overrun", 2, 100.0, True, True),
])
def test_verification_settles_and_records_an_overrun(remaining: int | None, now: float, settled: bool,
                                                     overrun: bool) -> None:
    assert verify_settled(remaining, now, DEADLINE) is settled
    assert overran(remaining) is overrun


def test_workloads_start_longest_budget_first_with_ties_broken_by_name() -> None:
    ordered = order_workloads([contract("a", 10), contract("c", 90), contract("b", 90), contract("d", 30)])
    assert [c.workload for c in ordered] == ["b", "c", "d", "a"]


def test_work_with_no_contract_gets_the_shortest_budget_held_or_30_s_and_sigterm() -> None:
    assert fallback_contract([contract("a", 40), contract("b", 12)]).drain_budget_s == 12
    none = fallback_contract([])
    assert (none.ref, none.drain_budget_s, none.drain_signal) == ("uncontracted@0", 30, "SIGTERM")


def test_a_plan_computes_each_deadline_once_and_groups_the_units_in_start_order() -> None:
    plan = plan_drain("n-1", 500.0, [contract("short", 5), contract("long", 60)], terminate_in_s=40.0)
    units = [Unit("j1", "short@1"), Unit("j2", "long@1"), Unit("j3", None), Unit("j4", "gone@9")]
    workloads = plan.workloads(units)
    assert [(w.contract.ref, [u.unit_id for u in w.units]) for w in workloads] == [
        ("long@1", ["j2"]), ("short@1", ["j1"]), ("uncontracted@0", ["j3", "j4"])]
    assert [w.deadline for w in workloads] == [540.0, 505.0, 505.0]  # window cap; fallback = shortest budget
    assert workloads[1].finish_at == 505.0 - FINISH_MARGIN_S
    assert dict(plan.deadlines) == {"short@1": 505.0, "long@1": 540.0, "uncontracted@0": 505.0}
    assert plan.reason == "sco reclaim notice n-1" and not plan.advisory


def test_an_advisory_plan_keeps_only_the_opted_in_workloads_and_their_units() -> None:
    plan = plan_drain("a-1", 0.0, [contract("etl", 2), contract("ml", 3, advisory=True)], None, {"ml@1"})
    workloads = plan.workloads([Unit("j1", "etl@1"), Unit("j2", "ml@1"), Unit("j3", None)])
    assert [(w.contract.ref, [u.unit_id for u in w.units]) for w in workloads] == [("ml@1", ["j2"])]
    assert plan.advisory and plan.reason == "sco advisory a-1" and plan.fallback.drain_budget_s == 3


def test_the_local_path_starts_every_workload_not_yet_started_with_its_own_units_and_deadline() -> None:
    etl, ml = contract("etl", 10), contract("ml", 20)
    plan = plan_drain("n-1", 0.0, [etl, ml], None)
    units = [Unit("j1", "etl@1"), Unit("j2", "ml@1")]
    everything = plan.local_plans(units, None, set())
    assert [(p.contract.ref, p.deadline, [u.unit_id for u in p.units]) for p in everything] == [
        ("ml@1", 20.0, ["j2"]), ("etl@1", 10.0, ["j1"])]
    assert [p.contract.ref for p in plan.local_plans(units, None, {"ml@1"})] == ["etl@1"]
    refused = plan.local_plans([Unit("p9", None)], etl, set())  # one workload's refused units: all its own
    assert [(p.contract.ref, [u.unit_id for u in p.units]) for p in refused] == [("etl@1", ["p9"])]
    assert plan.local_plans(units, etl, {"etl@1"}) == []


def test_with_no_contract_held_the_local_path_covers_the_uncontracted_work() -> None:
    plan = plan_drain("n-1", 0.0, [], None)
    assert [c.ref for c in plan.local_scope()] == ["uncontracted@0"]
    assert [p.contract.ref for p in plan.local_plans([], None, set())] == ["uncontracted@0"]
