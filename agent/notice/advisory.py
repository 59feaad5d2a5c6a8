"""An advisory that no reclaim followed (ADR-16), decided on the node: when it lapses, and what it cost.

An advisory drain cordons the node and drains the workloads that opted in; the hard notice normally follows
(median six minutes later). When no notice came by the advisory's ``expected_at`` plus ``ADVISORY_LAPSE_S``
(the window the precision analytics count an advisory as "followed"), the advisory was a false positive: the
node is made schedulable again and the false-positive cost is charged to each workload that opted in.

The charge (``wasted_s`` on an ``advisory-lapsed`` event, cause ``advisory-false-positive``) is the
instance-seconds the node stood cordoned from the advisory's receipt to the un-cordon, times the workload's
share of the node at the advisory (its drained units ÷ every unit on the node; with no units listed, the
opted-in workloads split the node equally). The work the drain itself lost is on the drain's own
``drained``/``overrun`` event (agent/drain/waste.py) and is not counted again; the lapse event repeats it as
``drain_wasted_s`` for the report. ``lapse_deadline`` and ``false_positive_charges`` decide (pure);
``AdvisoryWatch`` holds the advisory in force for the runtime and acts (un-cordon, events).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from contracts.cost_attributes import ADVISORY_LAPSE_S, ATTR_WASTED_S, FALSE_POSITIVE_CAUSE
from contracts.subjects import EventKind

from ..bundle import HeldBundle
from ..drain.adapters import SchedulerAdapter
from ..drain.engine import DrainReport
from .messages import Notice

__all__ = ["AdvisoryHold", "AdvisoryWatch", "Charge", "false_positive_charges", "lapse_deadline"]

log = logging.getLogger("sco.agent.advisory")
UNCORDON_TIMEOUT_S = 10.0
CHECK_S = 15.0  # how often a lapsed advisory is looked for (its window ends 30 min past expected_at)


class _Clock(Protocol):
    def now(self) -> datetime:
        """Wall time, UTC."""

    def monotonic(self) -> float:
        """Monotonic seconds."""


@dataclass(frozen=True)
class AdvisoryHold:
    """An advisory drain in force: the node stays cordoned until a hard notice or ``lapse_at`` (monotonic)."""

    notice_id: str
    received: float
    lapse_at: float
    cause: str
    drill: bool = False


@dataclass(frozen=True)
class Charge:
    """The false-positive cost of one opted-in workload."""

    workload: str
    contract_version: str
    wasted_s: int
    share: float
    drain_wasted_s: int

    def attributes(self, notice_id: str, cordoned_s: float) -> dict[str, Any]:
        """The ``advisory-lapsed`` event's attributes."""
        return {"notice_id": notice_id, ATTR_WASTED_S: self.wasted_s, "cordoned_s": round(cordoned_s),
                "node_share": round(self.share, 4), "drain_wasted_s": self.drain_wasted_s}


def lapse_deadline(received: float, expected_at: datetime | None, now: datetime, monotonic: float,
                   lapse_s: float = ADVISORY_LAPSE_S) -> float:
    """The monotonic second the advisory lapses.

    Its ``expected_at`` (carried onto the monotonic clock from ``now``/``monotonic``) plus ``lapse_s``, never
    earlier than ``lapse_s`` after its receipt (an expected time in the past or on a skewed clock does not cut
    the wait short).
    """
    floor = received + lapse_s
    if expected_at is None:
        return floor
    ahead = (expected_at - now).total_seconds()
    return max(floor, monotonic + ahead + lapse_s)


def false_positive_charges(workloads: Mapping[str, Mapping[str, Any]], versions: Mapping[str, tuple[str, str]],
                           node_units: int, cordoned_s: float) -> list[Charge]:
    """One charge per drained workload.

    ``workloads``: the advisory drain report's per-contract info (ref -> {"units", "wasted_s"...});
    ``versions``: ref -> (workload, contract version); ``node_units``: every unit on the node at the advisory;
    ``cordoned_s``: seconds from the advisory's receipt to the un-cordon.
    """
    refs = sorted(r for r in workloads if r in versions)
    listed = sum(int(workloads[r].get("units") or 0) for r in refs)
    out = []
    for ref in refs:
        info = workloads[ref]
        units = int(info.get("units") or 0)
        share = units / max(node_units, listed) if node_units > 0 and listed > 0 else 1.0 / len(refs)
        workload, version = versions[ref]
        out.append(Charge(workload, version, round(max(0.0, cordoned_s) * share), share,
                          int(info.get("wasted_s") or 0)))
    return out


class AdvisoryWatch:
    """The advisory drain in force on this node, and what happens when it lapses."""

    def __init__(self, scheduler: SchedulerAdapter, emit: Callable[..., None], clock: _Clock,
                 drain: Callable[[], asyncio.Future[DrainReport] | None], bundle: Callable[[], HeldBundle | None],
                 draining: Callable[[], bool]) -> None:
        """Wire the scheduler (to un-cordon), the event sink, the clocks and the runtime's state in."""
        self.scheduler, self.emit, self.clock = scheduler, emit, clock
        self.drain, self.bundle, self.draining = drain, bundle, draining
        self.current: AdvisoryHold | None = None
        self.lapsed = 0

    def hold(self, notice: Notice) -> None:
        """An advisory drain started: the node stays cordoned until a hard notice or the lapse."""
        self.current = AdvisoryHold(notice.notice_id, notice.received, lapse_deadline(
            notice.received, notice.expected_at, self.clock.now(), self.clock.monotonic()), notice.cause,
            notice.drill)

    def release(self) -> None:
        """A hard notice came: the advisory was right, nothing to undo or charge."""
        self.current = None

    async def run(self, closing: Callable[[], bool]) -> None:
        """Check every ``CHECK_S`` until ``closing()``."""
        while not closing():
            await asyncio.sleep(CHECK_S)
            await self.check()

    async def check(self) -> bool:
        """Un-cordon and charge when the advisory lapsed; True when it did.

        False while it holds, after a hard notice, while its drain runs, or when the scheduler did not answer
        (tried again on the next check).
        """
        hold, drain = self.current, self.drain()
        if hold is None or self.draining() or self.clock.monotonic() < hold.lapse_at or (
                drain is not None and not drain.done()):
            return False
        reason = f"sco advisory {hold.notice_id} lapsed without a reclaim"
        try:
            await asyncio.wait_for(asyncio.to_thread(self.scheduler.mark_schedulable, reason), UNCORDON_TIMEOUT_S)
        except Exception as exc:  # the cordon stays until the next check
            log.warning("could not make the node schedulable after advisory %s: %s", hold.notice_id, exc)
            return False
        self.current = None
        self.lapsed += 1
        cordoned = self.clock.monotonic() - hold.received
        report = drain.result() if drain is not None and not drain.cancelled() and drain.exception() is None else None
        held = self.bundle()
        contracts = held.contracts if held is not None else {}
        charges = false_positive_charges(report.workloads if report else {},
                                         {ref: (c.workload, c.version) for ref, c in contracts.items()},
                                         report.node_units if report else 0, cordoned)
        for charge in charges:
            self.emit(EventKind.ADVISORY_LAPSED, cause=FALSE_POSITIVE_CAUSE, drill=hold.drill,
                      workload=charge.workload, contract_version=charge.contract_version,
                      attributes=charge.attributes(hold.notice_id, cordoned))
        if not charges:
            self.emit(EventKind.ADVISORY_LAPSED, cause=FALSE_POSITIVE_CAUSE, drill=hold.drill,
                      attributes={"notice_id": hold.notice_id, "cordoned_s": round(cordoned)})
        return True
