"""What one drain carries: its report, its run, and the exceptions that change its path (``agent.drain.engine``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..model import Contract
from .plan import DrainPlan, Outcome

__all__ = ["Deferred", "DrainReport", "DrainRun", "SchedulerSlow", "chain", "workload_fields"]


class Deferred(Exception):
    """An advisory drain met a slow scheduler: it is not taken locally (the hard notice will be)."""


class SchedulerSlow(Exception):
    """The scheduler did not answer in time (or failed): drain locally."""

    def __init__(self, message: str, outcome: Outcome = Outcome.SLOW) -> None:
        """Carry the call's ``outcome`` (SLOW or FAILED) for the decision table."""
        super().__init__(message)
        self.outcome = outcome


@dataclass
class DrainReport:
    """What one drain did: its path, timings, per-workload results and the credentials it released."""

    notice_id: str
    path: str = "scheduler"  # scheduler | local | deferred (an advisory drain that met a slow scheduler)
    advisory: bool = False
    first_action_s: float | None = None
    local_at_s: float | None = None
    workloads: dict[str, dict[str, Any]] = field(default_factory=dict)
    revoked: list[str] = field(default_factory=list)
    leases_released: int = 0
    notice_at: datetime | None = None  # the notice's receipt on the engine's wall clock
    node_units: int = 0  # units listed on the node at the notice (all workloads): the wasted_s divisor
    done: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class DrainRun:
    """One drain in progress: its plan, its report and the fields every one of its events carries."""

    plan: DrainPlan
    report: DrainReport
    ev: dict[str, Any]  # cause, drill
    base: dict[str, Any]  # notice_id


def workload_fields(contract: Contract) -> dict[str, Any]:
    """The workload fields every event of a workload's drain carries."""
    return dict(workload=contract.workload, contract_version=contract.version)


def chain(task: asyncio.Task[DrainReport], report: asyncio.Future[DrainReport]) -> None:
    """``report`` gets ``task``'s outcome; cancelling ``report`` cancels ``task``."""

    def copy(_t: asyncio.Task[DrainReport]) -> None:
        if report.done():
            return
        if task.cancelled():
            report.cancel()
        elif (exc := task.exception()) is not None:
            report.set_exception(exc)
        else:
            report.set_result(task.result())

    task.add_done_callback(copy)
    report.add_done_callback(lambda r: task.cancel() if r.cancelled() else None)
