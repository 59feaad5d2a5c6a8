"""The drain, decided on the node (ADR-09, ADR-14).

On a notice: mark the node unschedulable (first action, target ≤ 2 s, goal ≤ 100 ms p99), list the
contracted work, then drain every workload concurrently, each against its own deadline (notice receipt +
its contract's drain budget, never later than the provider's ``terminate_at``). Workloads are *started*
longest budget first (ties: name) — the workload that needs the most time gets it even if the start of the
others is delayed — and nothing waits for another workload. Per workload: evict each unit through the
scheduler with grace = budget, retrying refusals (PDB 429) until the budget is nearly spent; wait for the
units to leave; finish what is left (Slurm requeue); verify; record an overrun if units remain at the
deadline. Any scheduler call that has not answered within ``scheduler_timeout`` (800 ms) switches the rest
of the drain to the local actuator. Then the node's leases are released and its tokens revoked.
Every step is an event (``emit``); nothing here waits for the network beyond the scheduler call. The
``drained``/``overrun`` events carry the work lost (``wasted_s``, agent/drain/waste.py), from the units' start times
relative to the notice's receipt on the injected clock.

Decide, then act: every decision (deadlines, order, retry / go local / defer, grace, finish and escalation
times) is a pure function of ``agent/drain/plan.py``; this module only executes them and calls the adapters.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar

from contracts.subjects import EventKind

from ..model import Contract, Unit
from .adapters import Credentials, LocalActuator, SchedulerAdapter
from .eager import bounded
from .first_actions import FirstActions, PendingAction, first_actions_pending, yield_to_first_actions
from .plan import (
    SCHEDULER_TIMEOUT_S,
    Action,
    call_outcome,
    decide,
    drain_reason,
    plan_drain,
)
from .report import Deferred, DrainReport, DrainRun, SchedulerSlow, chain
from .workload import WorkloadSteps

__all__ = ["DrainArgs", "DrainEngine", "DrainReport", "SchedulerSlow", "first_actions_pending",
           "yield_to_first_actions"]

log = logging.getLogger("sco.agent.drain")
T = TypeVar("T")
_UNSET = object()
Emit = Callable[..., None]
# ``drain``'s arguments from ``notice_id`` to ``announce``, as ``start``'s ``rest()`` gives them
DrainArgs = tuple[str, float, list[Contract], str, bool, float | None, set[str] | None, Callable[[], None] | None]


class DrainEngine(WorkloadSteps):
    """Executes drain plans through a scheduler adapter, a local actuator and the node's credentials."""

    def __init__(self, scheduler: SchedulerAdapter, actuator: LocalActuator, credentials: Credentials | None,
                 emit: Emit, now: Callable[[], datetime], monotonic: Callable[[], float] = time.monotonic,
                 scheduler_timeout: float = SCHEDULER_TIMEOUT_S,
                 on_first_action: Callable[[float], None] | None = None) -> None:
        """Wire the adapters, the event sink and the clocks (wall ``now``, ``monotonic``) in."""
        self.scheduler = scheduler
        self.actuator = actuator
        self.credentials = credentials
        self.emit = emit
        self.now = now
        self.monotonic = monotonic
        self.timeout = scheduler_timeout
        self.on_first_action = on_first_action
        self.local = False
        self.local_started: set[str] = set()
        self.unschedulable = False
        self.active = 0  # drains in progress; a drain that starts alone tries the scheduler afresh
        # scheduler method name -> its asyncio twin, or None; the first action's looked up here, before any notice
        self._natives: dict[str, Any] = {"mark_unschedulable": getattr(scheduler, "amark_unschedulable", None)}
        self._rest_of = self._start_rest  # bound once: a burst's drains allocate no more than they must

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """One scheduler call, bounded by the scheduler timeout; SchedulerSlow when slow or failed."""
        if self.local:
            raise SchedulerSlow("already draining locally")
        name = fn.__name__
        native = self._natives.get(name, _UNSET)
        if native is _UNSET:  # an asyncio twin: no thread hand-off (looked up once per method)
            native = self._natives[name] = getattr(self.scheduler, "a" + name, None)
        try:
            if native is not None:  # bounded in this task: no second task, no extra turn of the loop, and no
                return await bounded(native(*args), self.timeout)  # timer at all when it answers at once
            return await asyncio.wait_for(asyncio.to_thread(fn, *args), self.timeout)
        except TimeoutError:
            raise SchedulerSlow(f"{self.scheduler.name} did not answer {fn.__name__} within "
                                f"{self.timeout * 1000:.0f} ms", call_outcome(None, timeout_s=self.timeout)) from None
        except Exception as exc:  # the scheduler failed: same answer as slow
            raise SchedulerSlow(f"{self.scheduler.name} {fn.__name__} failed: {exc}",
                                call_outcome(None, failed=True)) from None

    def launch(self, notice_id: str, received: float, contracts: list[Contract], cause: str, drill: bool,
               terminate_in_s: float | None, selected: set[str] | None = None,
               announce: Callable[[], None] | None = None) -> asyncio.Task[DrainReport]:
        """Start ``drain`` as a task, its first action counted pending from now (``PendingAction``)."""
        pending = PendingAction()
        task = asyncio.get_running_loop().create_task(self.drain(
            notice_id, received, contracts, cause, drill, terminate_in_s, selected, announce, pending))
        task.add_done_callback(lambda _t: pending.done())  # cancelled before it ran: the gate opens all the same
        return task

    async def start(self, notice_id: str, advisory: bool,
                    rest: Callable[[], DrainArgs]) -> asyncio.Future[DrainReport]:
        """Issue the first action in the caller's task; return the rest of the drain's report to come.

        No task is created and no turn of the loop passes before the scheduler call, and nothing else is built for
        the drain before it: ``rest()`` gives ``drain``'s arguments (``notice_id`` to ``announce``) once the rest
        of the drain starts, when the first-action gate opens (at once when the first action failed: going local
        is then the first action). ``advisory``: an advisory's drain (``selected`` is given).
        """
        first = await self._first(notice_id, advisory, PendingAction())
        report: asyncio.Future[DrainReport] = asyncio.get_running_loop().create_future()
        run = partial(self._rest_of, report, rest, first)
        if isinstance(first, SchedulerSlow):
            run()
        else:
            FirstActions.after(run)
        return report

    def _start_rest(self, report: asyncio.Future[DrainReport], rest: Callable[[], DrainArgs],
                    first: float | SchedulerSlow) -> None:
        """Start the drain after its first action (``start``); its report gets the outcome."""
        if report.cancelled():
            self.active -= 1
            return
        try:
            args = rest()
        except Exception as exc:  # the arguments could not be built: the drain ends here, reported, gate intact
            self.active -= 1
            report.set_exception(exc)
            return
        chain(asyncio.get_running_loop().create_task(self._after_first(*args, first, gated=False)), report)

    async def drain(self, notice_id: str, received: float, contracts: list[Contract], cause: str,
                    drill: bool, terminate_in_s: float | None, selected: set[str] | None = None,
                    announce: Callable[[], None] | None = None,
                    pending: PendingAction | None = None) -> DrainReport:
        """Drain the node.

        Args:
            notice_id: The notice being drained.
            received: Its receipt on the engine's monotonic clock (the deadlines count from it).
            contracts: The contracts the node holds.
            cause: The notice's cause, on every event.
            drill: A drill notice, on every event.
            terminate_in_s: The provider's window (caps every deadline), or None.
            selected: Only these contract refs (an advisory drain); None drains everything.
            announce: Emits the notice's own event; called after the first action, before any other event.
            pending: The first action's place in the gate, when ``launch`` took it already.

        Returns:
            The drain's report, once verified (and the credentials released, for a hard notice).
        """
        first = await self._first(notice_id, selected is not None, pending or PendingAction())
        return await self._after_first(notice_id, received, contracts, cause, drill, terminate_in_s, selected,
                                       announce, first)

    async def _first(self, notice_id: str, advisory: bool, pending: PendingAction) -> float | SchedulerSlow:
        """Count the drain in and issue its first action, before anything else is built for its notice."""
        if self.active == 0:  # an earlier, finished drain that went local does not decide this one
            self.local = False
            if self.local_started:
                self.local_started = set()
        self.active += 1
        try:
            return await self._mark_unschedulable(drain_reason(notice_id, advisory), pending)
        except BaseException:
            self.active -= 1
            raise

    async def _after_first(self, notice_id: str, received: float, contracts: list[Contract], cause: str,
                           drill: bool, terminate_in_s: float | None, selected: set[str] | None,
                           announce: Callable[[], None] | None, first: float | SchedulerSlow,
                           gated: bool = True) -> DrainReport:
        """The drain after its first action: plan and execute it.

        Once the burst's other first actions are done: waited for here when ``gated``.
        """
        try:
            if gated and not isinstance(first, SchedulerSlow):  # a failed first action goes local at once
                await FirstActions.yield_to_pending()
            plan = plan_drain(notice_id, received, contracts, terminate_in_s, selected)
            report = DrainReport(notice_id, advisory=plan.advisory,
                                 notice_at=self.now() - timedelta(seconds=self.monotonic() - received))
            run = DrainRun(plan, report, dict(cause=cause, drill=drill), {"notice_id": notice_id})
            try:
                return await self._execute(run, announce, first)
            except Deferred as exc:
                report.path = "deferred"
                self.emit(EventKind.DRAIN_STARTED, **run.ev, attributes={
                    **run.base, "step": "advisory-deferred", "reason": str(exc)[:200]})
                report.done.set()
                return report
        finally:
            self.active -= 1

    async def _mark_unschedulable(self, reason: str, pending: PendingAction) -> float | SchedulerSlow:
        """The first action: when it was done (the engine's monotonic clock), or why the scheduler failed it."""
        try:
            await self._call(self.scheduler.mark_unschedulable, reason)
        except SchedulerSlow as exc:
            return exc
        finally:
            pending.done()
        self.unschedulable = True
        return self.monotonic()

    async def _execute(self, run: DrainRun, announce: Callable[[], None] | None,
                       first: float | SchedulerSlow) -> DrainReport:
        await self._first_action(run, announce, first)
        units = await self._list_units(run)
        run.report.node_units = len(units)
        tasks = []
        for workload in run.plan.workloads(units):
            tasks.append(asyncio.create_task(self._drain_workload(run, workload)))
            await asyncio.sleep(0)  # start in order
        if tasks:
            await asyncio.gather(*tasks)
        if self.local and not run.report.workloads:
            await self._verify_local(run)
        if not run.plan.advisory:  # the hard notice's drain ends the node's life; an advisory's does not
            await self._release(run)
        run.report.done.set()
        return run.report

    async def _first_action(self, run: DrainRun, announce: Callable[[], None] | None,
                            first: float | SchedulerSlow) -> None:
        """After the first action (and the others of its burst): announce the notice and record it."""
        if isinstance(first, SchedulerSlow):
            if announce is not None:
                announce()
            await self._act(run, self._decide_slow(run, first), str(first))
            return
        report = run.report
        report.first_action_s = first - run.plan.received
        if self.on_first_action:
            self.on_first_action(report.first_action_s)
        if announce is not None:
            announce()
        self.emit(EventKind.DRAIN_STARTED, **run.ev, attributes={**run.base, "step": "unschedulable",
                  "first_action_ms": round(report.first_action_s * 1000)})

    async def _list_units(self, run: DrainRun) -> list[Unit]:
        if self.local:
            return []
        try:
            return await self._call(self.scheduler.units)
        except SchedulerSlow as exc:
            await self._act(run, self._decide_slow(run, exc), str(exc))
            return []

    def _decide_slow(self, run: DrainRun, exc: SchedulerSlow) -> Action:
        return decide(exc.outcome, advisory=run.plan.advisory, now=self.monotonic())

    async def _act(self, run: DrainRun, action: Action, why: str, units: Iterable[Unit] = (),
                   only: Contract | None = None) -> None:
        """Execute a decision of the table: defer (advisory), go local, or nothing (continue / retry)."""
        if action is Action.DEFER:
            raise Deferred(why)
        if action is Action.GO_LOCAL:
            await self._go_local(run, units, why, only)

    async def _go_local(self, run: DrainRun, units: Iterable[Unit], why: str, only: Contract | None) -> None:
        report = run.report
        first = not self.local
        self.local = True
        report.path = "local"
        plans = run.plan.local_plans(units, only, self.local_started)
        if not plans:
            return
        self.local_started.update(p.contract.ref for p in plans)
        log.warning("local drain: %s", why)
        await asyncio.to_thread(self.actuator.start, plans, why)
        at = self.monotonic() - run.plan.received
        if first:
            report.local_at_s = at
            if report.first_action_s is None:
                report.first_action_s = at
                if self.on_first_action:
                    self.on_first_action(at)
        self.emit(EventKind.DRAIN_LOCAL, **run.ev, attributes={
            **run.base, "reason": why[:200], "actuator": self.actuator.name, "at_ms": round(at * 1000),
            "workloads": ",".join(p.contract.ref for p in plans)})

    async def _release(self, run: DrainRun) -> None:
        if self.credentials is None:
            return
        report = run.report
        try:
            report.leases_released = await asyncio.to_thread(self.credentials.release_leases)
            report.revoked = await asyncio.to_thread(self.credentials.revoke_tokens)
        except Exception as exc:  # best effort (ADR-31)
            log.warning("credential release failed: %s", exc)
        self.emit(EventKind.CREDENTIALS_REVOKED, **run.ev, attributes={
            **run.base, "leases_released": report.leases_released, "revoked": ",".join(report.revoked)})

