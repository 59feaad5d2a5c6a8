"""A quiet pass (ADR-10: the cost of evaluation follows change): a pass that decided nothing and recorded nothing
says so (``Decision.quiet``), with the soonest a timed rule can change its decision (``requeue_after``: an
exclusion's end, a notice leaving the breach window); ``quiet_until`` turns that into the time a caller that knows
when inputs change may skip passes until."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from controllers.controller.decide import begin, decide
from controllers.controller.decision import Decision, Desired, Place
from controllers.controller.loop import quiet_until
from controllers.controller.model import Glance, InputsInForce, Observation, Observed
from controllers.controller.observe import Observer
from controllers.controller.settings import ControllerSettings, PassReport
from testkit.builders import PARTITION, T0, contracts
from tests.controllers.controller.test_decide import ETL, POOLS, acting, demand, market, row

LATER = T0 + timedelta(minutes=1)
HALLS = {p.pool_id: p.hall for p in POOLS}


def _converged(idle: int = 3) -> tuple[Desired, Decision, tuple[Observed, ...], dict[str, Any]]:
    """A partition after its first placement: every planned instance running, its row saying so (``idle``)."""
    desired = Desired(ControllerSettings("r1", PARTITION), contracts(ETL))
    first = decide(Observation(Glance(1, False, 0, (), {}), {}, (), demand(ETL, 40), market(), {}, {}, 0), desired,
                   acting(desired), T0)
    running = tuple(Observed(f"{a.launch.key.pool}-{n}", f"node-{a.launch.key.pool}-{n}", a.launch.workload,
                             a.launch.key.pool, PARTITION, first.generation, a.launch.key.purpose, "active",
                             HALLS[a.launch.key.pool], T0) for a in first.of(Place) for n in range(a.launch.count))
    assert running, "the scenario needs a placement"
    return desired, first, running, {o.instance_id: row(o, idle) for o in running}


def _again(desired: Desired, first: Decision, running: tuple[Observed, ...], rows: dict[str, Any],
           recorded: dict[str, Any] | None = None, inputs: InputsInForce | None = None,
           notices_age_at: datetime | None = None, items: int = 40) -> Decision:
    glance = Glance(1, False, first.generation, running, rows, {}, notices_age_at)
    mem, hold = begin(glance, desired, first.memory, LATER)
    assert hold is None
    mkt = market() if inputs is None else replace(market(), inputs=inputs)
    return decide(Observation(glance, rows if recorded is None else recorded, (), demand(ETL, items), mkt, {}, {}, 0),
                  desired, mem, LATER)


def test_a_pass_on_a_converged_partition_is_quiet_and_the_first_placement_is_not() -> None:
    desired, first, running, rows = _converged()
    assert not first.quiet
    again = _again(desired, first, running, rows)
    assert again.quiet and again.requeue_after is None
    assert not again.of(Place)


@pytest.mark.parametrize(("change", "why"), [
    pytest.param("idle", "the look counted one more idle observation: its record changed a row", id="idle counted"),
    pytest.param("state", "a row's state changed (launching -> running)", id="state recorded"),
    pytest.param("demand", "the scheduler asks for more: a launch", id="more demand"),
])
def test_a_pass_that_records_or_decides_anything_is_not_quiet(change: str, why: str) -> None:
    desired, first, running, rows = _converged()
    recorded, items = rows, 40
    if change == "idle":
        rows = {k: {**r, "idle": 1} for k, r in rows.items()}
        recorded = {k: {**r, "idle": 2} for k, r in rows.items()}
    elif change == "state":
        rows = {k: {**r, "state": "launching"} for k, r in rows.items()}
        recorded = {k: {**r, "state": "running"} for k, r in rows.items()}
    else:
        items = 80
    assert not _again(desired, first, running, rows, recorded, items=items).quiet, why


def test_a_quiet_pass_names_the_soonest_exclusion_end_and_notice_ageing_as_its_deadline() -> None:
    desired, first, running, rows = _converged()
    ends = InputsInForce({}, {}, set(), set(), changes_at=LATER + timedelta(minutes=7))
    assert _again(desired, first, running, rows, inputs=ends).requeue_after == timedelta(minutes=7)
    aged = _again(desired, first, running, rows, inputs=ends, notices_age_at=LATER + timedelta(minutes=3))
    assert aged.quiet and aged.requeue_after == timedelta(minutes=3)


@pytest.mark.parametrize(("report", "until"), [
    pytest.param(PassReport(True), None, id="not quiet: the next pass is due"),
    pytest.param(PassReport(True, quiet=True), T0 + timedelta(minutes=5), id="quiet: half the lease's term"),
    pytest.param(PassReport(True, requeue_after=timedelta(minutes=2), quiet=True), T0 + timedelta(minutes=2),
                 id="quiet: a timed rule sooner"),
    pytest.param(PassReport(True, requeue_after=timedelta(hours=1), quiet=True), T0 + timedelta(minutes=5),
                 id="quiet: a timed rule later than the lease's renewal"),
])
def test_quiet_until_is_the_sooner_of_the_timed_rule_and_the_lease_renewal(report: PassReport,
                                                                          until: datetime | None) -> None:
    assert quiet_until(report, T0, timedelta(minutes=10)) == until


def test_the_glance_counts_the_notices_in_the_window_and_says_when_the_oldest_leaves_it() -> None:
    observer = Observer(None, None, None, None)  # type: ignore[arg-type]  # only the notices are used
    for workload, minutes in (("train", 70), ("etl", 50), ("train", 40), ("etl", 20)):
        observer.record_notice(workload, T0 - timedelta(minutes=minutes))
    counts, oldest = observer._notices_since(T0 - timedelta(hours=1))
    assert counts == {"etl": 2, "train": 1}
    assert oldest == T0 - timedelta(minutes=50)   # it leaves the hour's window ten minutes from now
    assert observer._notices_since(T0)[1] is None
