"""The drain engine against an in-memory scheduler: order, budgets, refusals, overruns, the local path."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from agent.drain.engine import DrainArgs, DrainEngine, DrainReport
from agent.drain.first_actions import PendingAction
from agent.drain.local import RecordingActuator
from agent.model import STARTED_AT, Contract, Unit, format_time
from contracts.subjects import EventKind
from tests.agent.fakes import FakeScheduler
from tests.agent.helpers import workload_entry


def contract(name: str, budget: int, **kw: Any) -> Contract:
    entry = workload_entry(name, budget=budget, **kw)
    return Contract.from_entry(f"{name}@1", entry)


def run_drain(sched: FakeScheduler, contracts: list[Contract], actuator: RecordingActuator | None = None,
              terminate_in: float | None = None, selected: set[str] | None = None,
              now: Callable[[], datetime] = lambda: datetime.now(UTC),
              ) -> tuple[DrainReport, list[tuple[Any, dict[str, Any]]], float]:
    events: list[tuple[Any, dict[str, Any]]] = []
    actuator = actuator or RecordingActuator()

    async def go() -> tuple[DrainReport, float]:
        engine = DrainEngine(sched, actuator, None, lambda kind, **kw: events.append((kind, kw)), now)
        received = time.monotonic()
        report = await engine.drain("n-1", received, contracts, "reclaim", False, terminate_in, selected)
        return report, received

    report, received = asyncio.run(go())
    return report, events, received


def test_a_drain_marks_the_node_first_then_evicts_each_workload_longest_budget_first_and_verifies() -> None:
    sched = FakeScheduler(units_on_node=[Unit("j1", "short@1"), Unit("j2", "long@1"), Unit("j3", "long@1")])
    report, events, _ = run_drain(sched, [contract("short", 2), contract("long", 5)])
    assert sched.names()[0] == "unschedulable"
    evicts = [arg for what, _, arg in sched.calls if what == "evict"]
    assert evicts[0] == "j2" and sorted(evicts) == ["j1", "j2", "j3"]  # long starts first, both run at once
    assert report.path == "scheduler" and report.first_action_s is not None and report.first_action_s < 0.5
    drained = [kw for kind, kw in events if kind == EventKind.DRAINED]
    assert sorted(kw["workload"] for kw in drained) == ["long", "short"]
    assert all(kw["attributes"]["remaining"] == 0 and kw["attributes"]["verified"] for kw in drained)
    steps = [kw["attributes"].get("step") for kind, kw in events if kind == EventKind.DRAIN_STARTED]
    assert steps[0] == "unschedulable" and steps.count("evict") == 2 and steps.count("signal") == 3


def test_an_eviction_refused_with_429_is_retried_until_accepted_within_the_budget() -> None:
    sched = FakeScheduler(units_on_node=[Unit("p1", "web@1")], blocked_times={"p1": 2})
    report, events, _ = run_drain(sched, [contract("web", 6)])
    assert [a for w, _, a in sched.calls if w == "evict"] == ["p1", "p1", "p1"]
    assert report.workloads["web@1"]["retries"] == 2 and report.path == "scheduler"
    assert any(kind == EventKind.DRAINED for kind, _ in events)


def test_each_eviction_is_sent_with_the_whole_seconds_left_of_the_budget_as_its_grace() -> None:
    sched = FakeScheduler(units_on_node=[Unit("p1", "web@1")], blocked_times={"p1": 2})
    run_drain(sched, [contract("web", 6)])
    graces = [grace for _, grace in sched.graces]
    assert len(graces) == 3 and graces[0] <= 5 and graces == sorted(graces, reverse=True)
    assert graces[-1] <= graces[0] - 2  # two 1 s retries later: two seconds less


def test_a_refusal_that_outlasts_the_budget_hands_those_units_to_the_local_actuator_and_records_an_overrun() -> None:
    sched = FakeScheduler(units_on_node=[Unit("p1", "web@1")], blocked_times={"p1": 10_000})
    actuator = RecordingActuator(units=1)
    started = time.monotonic()
    report, events, _ = run_drain(sched, [contract("web", 2)], actuator)
    assert 1.5 < time.monotonic() - started < 4
    assert actuator.calls[0][0] == "start" and actuator.calls[0][2] == ["web@1"]
    assert report.path == "local" and report.workloads["web@1"]["blocked"] == 1
    kinds = [kind for kind, _ in events]
    assert EventKind.DRAIN_LOCAL in kinds and EventKind.OVERRUN in kinds and EventKind.DRAINED not in kinds


def test_a_unit_that_ignores_its_signal_is_finished_before_the_deadline() -> None:
    sched = FakeScheduler(units_on_node=[Unit("j1", "etl@1")], leave_on_evict=False)
    _, events, received = run_drain(sched, [contract("etl", 2)])
    finish = [t for w, t, _ in sched.calls if w == "finish"]
    assert finish and 0.7 < finish[0] - received < 1.5  # deadline (2 s) minus the 1 s finish margin
    assert any(kind == EventKind.DRAINED for kind, _ in events)


def test_a_unit_still_there_at_the_deadline_is_an_overrun() -> None:
    sched = FakeScheduler(units_on_node=[Unit("j1", "etl@1")], leave_on_evict=False, leave_on_finish=False)
    report, events, _ = run_drain(sched, [contract("etl", 2)])
    overrun = [kw for kind, kw in events if kind == EventKind.OVERRUN]
    assert overrun and overrun[0]["attributes"]["remaining"] == 1 and report.workloads["etl@1"]["overrun"]


def test_a_scheduler_slower_than_800_ms_sends_the_drain_to_the_local_actuator() -> None:
    sched = FakeScheduler(units_on_node=[Unit("j1", "etl@1")], latency_s=1.0)
    actuator = RecordingActuator(units=0)
    report, events, received = run_drain(sched, [contract("etl", 5)], actuator)
    start = actuator.calls[0]
    assert start[0] == "start" and 0.75 <= start[1] - received < 1.3
    assert report.path == "local" and report.local_at_s is not None and 0.75 <= report.local_at_s < 1.3
    assert events[0][0] == EventKind.DRAIN_LOCAL
    assert any(kind == EventKind.DRAINED for kind, _ in events)


def test_the_provider_deadline_caps_a_workloads_budget() -> None:
    sched = FakeScheduler(units_on_node=[Unit("j1", "etl@1")], leave_on_evict=False, leave_on_finish=False)
    started = time.monotonic()
    run_drain(sched, [contract("etl", 60)], terminate_in=1.5)
    assert time.monotonic() - started < 3


def test_an_advisory_drain_touches_only_the_opted_in_workloads() -> None:
    sched = FakeScheduler(units_on_node=[Unit("j1", "etl@1"), Unit("j2", "ml@1")])
    report, _, _ = run_drain(sched, [contract("etl", 2), contract("ml", 2, advisory=True)], selected={"ml@1"})
    assert [a for w, _, a in sched.calls if w == "evict"] == ["j2"]
    assert list(report.workloads) == ["ml@1"]


def test_a_later_drain_tries_the_scheduler_again_after_an_earlier_one_went_local() -> None:
    sched = FakeScheduler(units_on_node=[Unit("j1", "ml@1")], latency_s=1.0)
    actuator = RecordingActuator(units=0)

    async def go() -> tuple[DrainReport, DrainReport]:
        engine = DrainEngine(sched, actuator, None, lambda kind, **kw: None, lambda: datetime.now(UTC))
        first = await engine.drain("n1", time.monotonic(), [contract("ml", 2)], "reclaim", False, None)
        sched.latency_s = 0.0
        second = await engine.drain("n2", time.monotonic(), [contract("ml", 2)], "reclaim", False, None)
        return first, second

    first, second = asyncio.run(go())
    assert first.path == "local" and second.path == "scheduler"


def test_an_advisory_drain_never_takes_the_local_path_and_never_releases_the_nodes_credentials() -> None:
    class Creds:
        calls = 0

        def release_leases(self) -> int:
            Creds.calls += 1
            return 0

        def revoke_tokens(self) -> list[str]:
            Creds.calls += 1
            return []

    slow = FakeScheduler(units_on_node=[Unit("j1", "ml@1")], latency_s=1.0)
    actuator = RecordingActuator(units=1)
    events: list[tuple[Any, dict[str, Any]]] = []

    async def go(sched: FakeScheduler) -> DrainReport:
        engine = DrainEngine(sched, actuator, Creds(), lambda kind, **kw: events.append((kind, kw)),
                             lambda: datetime.now(UTC))
        return await engine.drain("adv", time.monotonic(), [contract("ml", 2, advisory=True), contract("etl", 2)],
                                  "reclaim", False, None, {"ml@1"})

    deferred = asyncio.run(go(slow))
    assert deferred.path == "deferred" and not actuator.calls and Creds.calls == 0
    assert events[-1][1]["attributes"]["step"] == "advisory-deferred"
    fast = FakeScheduler(units_on_node=[Unit("j1", "ml@1"), Unit("j2", "etl@1")])
    done = asyncio.run(go(fast))
    assert done.path == "scheduler" and list(done.workloads) == ["ml@1"] and Creds.calls == 0
    assert [a for w, _, a in fast.calls if w == "evict"] == ["j1"]
    assert all(kind != EventKind.CREDENTIALS_REVOKED for kind, _ in events)


NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)  # the engine's injected wall clock: the notice is received "now"


def started(unit_id: str, ref: str, ran_s: int | None) -> Unit:
    attrs = {} if ran_s is None else {STARTED_AT: format_time(NOW - timedelta(seconds=ran_s))}
    return Unit(unit_id, ref, attributes=attrs)


def checkpointing(name: str, budget: int, **fields: Any) -> Contract:
    return Contract.from_entry(f"{name}@1", {**workload_entry(name, budget=budget), **fields})


def test_drained_events_carry_the_instances_lost_work_from_the_units_start_times_on_the_injected_clock() -> None:
    frames = checkpointing("frames", 3, checkpoint_mode="framework", framework="slurm-requeue",
                           checkpoint_interval_min=None, max_unit_length_min=45)
    train = checkpointing("train", 3, checkpoint_mode="final-on-notice+periodic", checkpoint_interval_min=30)
    sched = FakeScheduler(units_on_node=[started("j1", "frames@1", 600), started("j2", "frames@1", 4000),
                                         started("j3", "train@1", 5000), started("j4", "frames@1", None)])
    _, events, _ = run_drain(sched, [frames, train], now=lambda: NOW)
    drained = {kw["workload"]: kw["attributes"] for kind, kw in events if kind == EventKind.DRAINED}
    # requeue: 600 s + the 45 min cap (2700 s) over the node's 4 units; j4 has no start and counts nothing
    assert drained["frames"]["wasted_s"] == 825 and drained["frames"]["wasted_units"] == 2
    assert drained["frames"]["wasted_units_no_start"] == 1
    # a final checkpoint on notice, drained within budget: nothing lost
    assert drained["train"]["wasted_s"] == 0 and drained["train"]["wasted_units"] == 1


def test_an_overrun_event_carries_the_work_since_the_last_periodic_checkpoint() -> None:
    train = checkpointing("train", 2, checkpoint_mode="final-on-notice+periodic", checkpoint_interval_min=30)
    sched = FakeScheduler(units_on_node=[started("j1", "train@1", 2000)], leave_on_evict=False,
                          leave_on_finish=False)
    report, events, _ = run_drain(sched, [train], now=lambda: NOW)
    overrun = [kw["attributes"] for kind, kw in events if kind == EventKind.OVERRUN]
    assert overrun and overrun[0]["wasted_s"] == 200 and overrun[0]["wasted_units"] == 1  # 2000 mod 1800
    assert report.workloads["train@1"]["wasted_s"] == 200


def test_a_drain_whose_arguments_cannot_be_built_reports_why_and_the_rest_of_the_burst_still_drains() -> None:
    broken_sched, sched = FakeScheduler(), FakeScheduler(units_on_node=[Unit("j1", "etl@1")])

    def engine(scheduler: FakeScheduler) -> DrainEngine:
        return DrainEngine(scheduler, RecordingActuator(), None, lambda kind, **kw: None, lambda: datetime.now(UTC))

    def no_arguments() -> DrainArgs:
        raise ValueError("no arguments")

    async def go() -> tuple[BaseException | None, DrainReport, int]:
        broken, fine = engine(broken_sched), engine(sched)
        other = PendingAction()  # the burst: both drains' later steps wait for the gate
        failed = await broken.start("n-1", False, no_arguments)
        report = await fine.start("n-2", False, lambda: ("n-2", time.monotonic(), [contract("etl", 2)], "reclaim",
                                                         False, None, None, None))
        other.done()
        done = await asyncio.wait_for(report, 10)
        return failed.exception(), done, broken.active

    error, report, active = asyncio.run(go())
    assert isinstance(error, ValueError) and active == 0  # the broken drain ended, counted out
    assert "unschedulable" in broken_sched.names() and report.workloads["etl@1"]["remaining"] == 0
