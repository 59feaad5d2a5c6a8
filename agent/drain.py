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
``drained``/``overrun`` events carry the work lost (``wasted_s``, agent/waste.py), from the units' start times
relative to the notice's receipt on the injected clock.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

from contracts.subjects import EventKind

from .adapters import EVICT_BLOCKED, EVICT_GONE, Credentials, LocalActuator, LocalPlan, SchedulerAdapter
from .first_actions import FirstActions, first_actions_pending, yield_to_first_actions
from .model import Contract, Unit
from .waste import drain_waste

__all__ = ["DrainEngine", "DrainReport", "first_actions_pending", "order_workloads", "yield_to_first_actions"]

log = logging.getLogger("sco.agent.drain")
T = TypeVar("T")
Emit = Callable[..., None]
FINISH_MARGIN_S = 1.0  # finish (requeue) this long before the deadline
POLL_S = 0.25
RETRY_S = 1.0  # eviction retry after a 429 (or the server's Retry-After)
DEFAULT_BUDGET_S = 30


class _Deferred(Exception):
    """An advisory drain met a slow scheduler: it is not taken locally (the hard notice will be)."""


class SchedulerSlow(Exception):
    """The scheduler did not answer in time (or failed): drain locally."""


@dataclass
class DrainReport:
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


def order_workloads(contracts: list[Contract]) -> list[Contract]:
    """Start order: longest drain budget first, then by name (documented in docs/agent.md)."""
    return sorted(contracts, key=lambda c: (-c.drain_budget_s, c.workload, c.version))


def fallback_contract(known: list[Contract]) -> Contract:
    """For work with no (known) contract: the shortest budget held, or 30 s with SIGTERM."""
    budget = min((c.drain_budget_s for c in known), default=DEFAULT_BUDGET_S)
    return Contract(workload="uncontracted", version="0", tier="", scheduler="", drain_budget_s=budget,
                    drain_signal="SIGTERM", advisory_drain=False, checkpoint_mode="none", framework=None,
                    checkpoint_interval_min=None, restart="", requeue=True, max_unit_length_min=None)


class DrainEngine:
    def __init__(self, scheduler: SchedulerAdapter, actuator: LocalActuator, credentials: Credentials | None,
                 emit: Emit, now: Callable[[], datetime], monotonic: Callable[[], float] = time.monotonic,
                 scheduler_timeout: float = 0.8, on_first_action: Callable[[float], None] | None = None) -> None:
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

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        if self.local:
            raise SchedulerSlow("already draining locally")
        native = getattr(self.scheduler, "a" + fn.__name__, None)  # an asyncio twin: no thread hand-off
        try:
            if native is not None:
                result: T = await asyncio.wait_for(native(*args), self.timeout)
                return result
            return await asyncio.wait_for(asyncio.to_thread(fn, *args), self.timeout)
        except TimeoutError:
            raise SchedulerSlow(f"{self.scheduler.name} did not answer {fn.__name__} within "
                                f"{self.timeout * 1000:.0f} ms") from None
        except Exception as exc:  # the scheduler failed: same answer as slow
            raise SchedulerSlow(f"{self.scheduler.name} {fn.__name__} failed: {exc}") from None

    async def drain(self, notice_id: str, received: float, contracts: list[Contract], cause: str,
                    drill: bool, terminate_in_s: float | None, selected: set[str] | None = None,
                    announce: Callable[[], None] | None = None) -> DrainReport:
        """Drain the node. ``selected``: only these contract refs (advisory drain); None = everything.
        ``announce`` emits the notice's own event; it is called after the first action, before any other."""
        if self.active == 0:  # an earlier, finished drain that went local does not decide this one
            self.local = False
            self.local_started = set()
        self.active += 1
        try:
            return await self._drain(notice_id, received, contracts, cause, drill, terminate_in_s, selected,
                                     announce)
        finally:
            self.active -= 1

    async def _drain(self, notice_id: str, received: float, contracts: list[Contract], cause: str,
                     drill: bool, terminate_in_s: float | None, selected: set[str] | None,
                     announce: Callable[[], None] | None) -> DrainReport:
        report = DrainReport(notice_id, notice_at=self.now() - timedelta(seconds=self.monotonic() - received))
        ev = dict(cause=cause, drill=drill)
        base = {"notice_id": notice_id}
        reason = f"sco reclaim notice {notice_id}"
        advisory = selected is not None
        if advisory:  # only the opted-in workloads; never the local path, never the node's credentials
            contracts = [c for c in contracts if c.ref in (selected or set())]
            reason = f"sco advisory {notice_id}"
        try:
            return await self._drain_scoped(report, received, contracts, terminate_in_s, selected, announce,
                                            ev, base, reason)
        except _Deferred as exc:
            report.path = "deferred"
            self.emit(EventKind.DRAIN_STARTED, **ev, attributes={**base, "step": "advisory-deferred",
                                                                 "reason": str(exc)[:200]})
            report.done.set()
            return report

    async def _drain_scoped(self, report: DrainReport, received: float, contracts: list[Contract],
                            terminate_in_s: float | None, selected: set[str] | None,
                            announce: Callable[[], None] | None, ev: dict[str, Any], base: dict[str, Any],
                            reason: str) -> DrainReport:
        report.advisory = selected is not None
        FirstActions.begin()
        try:
            await self._call(self.scheduler.mark_unschedulable, reason)
            self.unschedulable = True
            report.first_action_s = self.monotonic() - received
            FirstActions.end()
            if self.on_first_action:
                self.on_first_action(report.first_action_s)
            await FirstActions.yield_to_pending()
            if announce is not None:
                announce()
            self.emit(EventKind.DRAIN_STARTED, **ev, attributes={**base, "step": "unschedulable",
                      "first_action_ms": round(report.first_action_s * 1000)})
        except SchedulerSlow as exc:
            FirstActions.end()
            if announce is not None:
                announce()
            await self._go_local(report, received, contracts, [], str(exc), ev, base, terminate_in_s)
        except BaseException:
            FirstActions.end()
            raise
        units: list[Unit] = []
        if not self.local:
            try:
                units = await self._call(self.scheduler.units)
            except SchedulerSlow as exc:
                await self._go_local(report, received, contracts, [], str(exc), ev, base, terminate_in_s)
        report.node_units = len(units)
        by_ref = {c.ref: c for c in contracts}
        groups: dict[str, tuple[Contract, list[Unit]]] = {}
        fallback = fallback_contract(contracts)
        for unit in units:
            contract = by_ref.get(unit.contract_ref or "", fallback)
            if selected is not None and contract.ref not in selected:
                continue
            groups.setdefault(contract.ref, (contract, []))[1].append(unit)
        ordered = order_workloads([c for c, _ in groups.values()])
        tasks = []
        for contract in ordered:
            deadline = received + contract.drain_budget_s
            if terminate_in_s is not None:
                deadline = min(deadline, received + max(terminate_in_s, 0.0))
            tasks.append(asyncio.create_task(self._drain_workload(
                report, contract, groups[contract.ref][1], deadline, received, ev, base, terminate_in_s,
                contracts)))
            await asyncio.sleep(0)  # start in order
        if tasks:
            await asyncio.gather(*tasks)
        if self.local and not report.workloads:
            await self._verify_local(report, received, contracts, ev, base, terminate_in_s)
        if not report.advisory:  # the hard notice's drain ends the node's life; an advisory's does not
            await self._release(report, ev, base)
        report.done.set()
        return report

    async def _go_local(self, report: DrainReport, received: float, contracts: list[Contract],
                        units: list[Unit], why: str, ev: dict[str, Any], base: dict[str, Any],
                        terminate_in_s: float | None, only: Contract | None = None) -> None:
        if report.advisory:  # a forecast does not justify shutting the node down; the hard notice will
            raise _Deferred(why)
        first = not self.local
        self.local = True
        report.path = "local"
        targets = [only] if only is not None else (contracts or [fallback_contract(contracts)])
        targets = [c for c in targets if c.ref not in self.local_started]
        if not targets:
            return
        self.local_started.update(c.ref for c in targets)
        plans = [LocalPlan(c, self._deadline(received, c, terminate_in_s),
                           tuple(u for u in units if (u.contract_ref or "") == c.ref or only is not None))
                 for c in order_workloads(targets)]
        log.warning("local drain: %s", why)
        await asyncio.to_thread(self.actuator.start, plans, why)
        at = self.monotonic() - received
        if first:
            report.local_at_s = at
            if report.first_action_s is None:
                report.first_action_s = at
                if self.on_first_action:
                    self.on_first_action(at)
        self.emit(EventKind.DRAIN_LOCAL, **ev, attributes={**base, "reason": why[:200], "actuator": self.actuator.name,
                                                           "at_ms": round(at * 1000),
                                                           "workloads": ",".join(p.contract.ref for p in plans)})

    def _deadline(self, received: float, contract: Contract, terminate_in_s: float | None) -> float:
        deadline = received + contract.drain_budget_s
        if terminate_in_s is not None:
            deadline = min(deadline, received + max(terminate_in_s, 0.0))
        return deadline

    async def _remaining(self, contract: Contract, units: list[Unit]) -> list[Unit]:
        ids = {u.unit_id for u in units}
        now_units = await self._call(self.scheduler.units)
        return [u for u in now_units if u.unit_id in ids]

    async def _drain_workload(self, report: DrainReport, contract: Contract, units: list[Unit], deadline: float,
                              received: float, ev: dict[str, Any], base: dict[str, Any],
                              terminate_in_s: float | None, contracts: list[Contract]) -> None:
        wl = dict(workload=contract.workload, contract_version=contract.version)
        info: dict[str, Any] = {"units": len(units), "budget_s": contract.drain_budget_s, "retries": 0}
        report.workloads[contract.ref] = info
        self.emit(EventKind.DRAIN_STARTED, **ev, **wl, attributes={
            **base, "step": "evict", "units": len(units), "budget_s": contract.drain_budget_s,
            "signal": contract.drain_signal, "unit_ids": ",".join(u.unit_id for u in units)[:500]})
        pending = list(units)
        try:
            # 1. evict / signal every unit; retry refusals (PDB) until the finish margin
            while pending and not self.local:
                blocked = []
                for unit in pending:
                    # grace = what is left of the budget (the whole budget on the first attempt; less after
                    # PDB retries), so the kubelet's kill lands before our deadline, not after it
                    budget_left = max(1, int(deadline - self.monotonic()))
                    graced = replace(contract, drain_budget_s=min(contract.drain_budget_s, budget_left))
                    result = await self._call(self.scheduler.evict, unit, graced)
                    if result == EVICT_BLOCKED:
                        blocked.append(unit)
                    elif result != EVICT_GONE:
                        self.emit(EventKind.DRAIN_STARTED, **ev, **wl, attributes={
                            **base, "step": "signal", "unit": unit.unit_id, "signal": contract.drain_signal,
                            "checkpoint_mode": contract.checkpoint_mode})
                pending = blocked
                if not pending:
                    break
                info["retries"] += len(pending)
                if self.monotonic() + RETRY_S > deadline - FINISH_MARGIN_S:
                    break
                await asyncio.sleep(RETRY_S)
            if pending and not self.local:  # the PDB held until the budget was spent: drain these locally
                info["blocked"] = len(pending)
                await self._go_local(report, received, contracts, pending,
                                     f"eviction of {len(pending)} unit(s) refused until the drain budget was spent",
                                     ev, base, terminate_in_s, only=contract)
            # 2. wait for the units to leave, until the finish margin
            left = list(units)
            while not self.local and self.monotonic() < deadline - FINISH_MARGIN_S:
                left = await self._remaining(contract, units)
                if not left:
                    break
                await asyncio.sleep(POLL_S)
            # 3. finish what is left (Slurm: requeue)
            if left and not self.local:
                for unit in left:
                    await self._call(self.scheduler.finish, unit, contract)
                    self.emit(EventKind.DRAIN_STARTED, **ev, **wl, attributes={
                        **base, "step": "finish", "unit": unit.unit_id, "requeue": contract.requeue})
            # 4. verify
            remaining = await self._verify(contract, units, deadline)
        except SchedulerSlow as exc:
            await self._go_local(report, received, contracts, units, str(exc), ev, base, terminate_in_s,
                                 only=contract)
            remaining = await self._verify(contract, units, deadline)
        await self._record(report, info, contract, remaining, received, units, ev, wl, base)

    async def _verify(self, contract: Contract, units: list[Unit], deadline: float) -> int | None:
        """Wait until the units are gone or the deadline; return how many remain (None: cannot tell)."""
        finished: dict[str, int] = {}
        while True:
            remaining: int | None
            if self.local:
                now = self.monotonic()
                stage = finished.get(contract.ref, 0)
                # finish (SIGTERM) at the finish margin, again (escalating) at the deadline
                if contract.ref in self.local_started and (
                        (stage == 0 and now >= deadline - FINISH_MARGIN_S) or (stage == 1 and now >= deadline)):
                    finished[contract.ref] = stage + 1
                    plans = [LocalPlan(contract, deadline, tuple(units))]
                    await asyncio.to_thread(self.actuator.finish, plans)
                remaining = await asyncio.to_thread(self.actuator.remaining)
            else:  # SchedulerSlow propagates: the caller switches to the local path
                remaining = len(await self._remaining(contract, units))
            if remaining == 0 or remaining is None or self.monotonic() >= deadline:
                return remaining
            await asyncio.sleep(POLL_S)

    async def _record(self, report: DrainReport, info: dict[str, Any], contract: Contract, remaining: int | None,
                      received: float, units: list[Unit], ev: dict[str, Any], wl: dict[str, Any],
                      base: dict[str, Any]) -> None:
        seconds = self.monotonic() - received
        waste = drain_waste(contract, units, report.node_units, report.notice_at or self.now(), remaining)
        info.update(seconds=seconds, remaining=remaining, path=report.path, wasted_s=waste.wasted_s)
        attrs = {**base, "step": "verify", "units": info["units"], "remaining": remaining,
                 "drain_ms": round(seconds * 1000), "budget_s": contract.drain_budget_s, "path": report.path,
                 "verified": remaining is not None, **waste.attributes()}
        if remaining:
            info["overrun"] = True
            self.emit(EventKind.OVERRUN, **ev, **wl, attributes=attrs)
        else:
            info["overrun"] = False
            self.emit(EventKind.DRAINED, **ev, **wl, attributes=attrs)

    async def _verify_local(self, report: DrainReport, received: float, contracts: list[Contract],
                            ev: dict[str, Any], base: dict[str, Any], terminate_in_s: float | None) -> None:
        """Local path with no unit list: verify per contract through the actuator."""
        targets = order_workloads(contracts or [fallback_contract(contracts)])
        for contract in targets:
            deadline = self._deadline(received, contract, terminate_in_s)
            info: dict[str, Any] = {"units": None, "budget_s": contract.drain_budget_s, "retries": 0}
            report.workloads[contract.ref] = info
            remaining = await self._verify(contract, [], deadline)
            await self._record(report, info, contract, remaining, received, [], ev,
                               dict(workload=contract.workload, contract_version=contract.version), base)

    async def _release(self, report: DrainReport, ev: dict[str, Any], base: dict[str, Any]) -> None:
        if self.credentials is None:
            return
        try:
            report.leases_released = await asyncio.to_thread(self.credentials.release_leases)
            report.revoked = await asyncio.to_thread(self.credentials.revoke_tokens)
        except Exception as exc:  # best effort (ADR-31)
            log.warning("credential release failed: %s", exc)
        self.emit(EventKind.CREDENTIALS_REVOKED, **ev, attributes={
            **base, "leases_released": report.leases_released, "revoked": ",".join(report.revoked)})
