"""A drain's per-workload steps, a mixin of ``DrainEngine`` (agent/drain/engine.py) with no state of its own.

Evict every unit through the scheduler, retrying refusals; wait for the units to leave; finish what is left
(Slurm: requeue); verify against the deadline; record ``drained`` or ``overrun`` with the work lost. A scheduler
call that does not answer in time raises ``SchedulerSlow`` and the engine's decision table takes the rest local
(``DrainEngine._act``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from contracts.subjects import EventKind

from ..model import Contract, Unit
from .adapters import EVICT_BLOCKED, EVICT_GONE, LocalActuator, LocalPlan, SchedulerAdapter
from .plan import (
    POLL_S,
    RETRY_S,
    Action,
    LocalStep,
    Outcome,
    WorkloadPlan,
    decide,
    eviction_grace_s,
    local_step,
    overran,
    verify_settled,
)
from .report import DrainRun, SchedulerSlow, workload_fields
from .waste import drain_waste

__all__ = ["WorkloadSteps"]

T = TypeVar("T")


class WorkloadSteps:
    """The steps ``DrainEngine`` runs for each workload of a drain (and the local path's verification)."""

    scheduler: SchedulerAdapter
    actuator: LocalActuator
    emit: Callable[..., None]
    now: Callable[[], datetime]
    monotonic: Callable[[], float]
    local: bool
    local_started: set[str]

    if TYPE_CHECKING:  # the engine's, in agent/drain/engine.py
        async def _call(self, fn: Callable[..., T], *args: Any) -> T: ...

        async def _act(self, run: DrainRun, action: Action, why: str, units: Iterable[Unit] = (),
                       only: Contract | None = None) -> None: ...

        def _decide_slow(self, run: DrainRun, exc: SchedulerSlow) -> Action: ...

    async def _remaining(self, units: Iterable[Unit]) -> list[Unit]:
        ids = {u.unit_id for u in units}
        now_units = await self._call(self.scheduler.units)
        return [u for u in now_units if u.unit_id in ids]

    async def _drain_workload(self, run: DrainRun, workload: WorkloadPlan) -> None:
        contract, units = workload.contract, workload.units
        wl = workload_fields(contract)
        info: dict[str, Any] = {"units": len(units), "budget_s": contract.drain_budget_s, "retries": 0}
        run.report.workloads[contract.ref] = info
        self.emit(EventKind.DRAIN_STARTED, **run.ev, **wl, attributes={
            **run.base, "step": "evict", "units": len(units), "budget_s": contract.drain_budget_s,
            "signal": contract.drain_signal, "unit_ids": ",".join(u.unit_id for u in units)[:500]})
        try:
            await self._evict(run, workload, info)  # 1. evict / signal every unit, retrying refusals
            left = await self._wait_to_leave(workload)  # 2. wait for the units to leave
            await self._finish(run, workload, left)  # 3. finish what is left (Slurm: requeue)
            remaining = await self._verify(contract, units, workload.deadline)  # 4. verify
        except SchedulerSlow as exc:
            await self._act(run, self._decide_slow(run, exc), str(exc), units, only=contract)
            remaining = await self._verify(contract, units, workload.deadline)
        await self._record(run, info, contract, remaining, units)

    async def _evict(self, run: DrainRun, workload: WorkloadPlan, info: dict[str, Any]) -> None:
        """Evict every unit; retry refusals (PDB) as the table says; hand what outlasts the budget to local."""
        contract = workload.contract
        pending = list(workload.units)
        action = Action.CONTINUE
        while pending and not self.local:
            blocked = []
            for unit in pending:
                # grace = what is left of the budget (the whole budget on the first attempt; less after
                # PDB retries), so the kubelet's kill lands before our deadline, not after it
                grace = eviction_grace_s(contract.drain_budget_s, workload.deadline, self.monotonic())
                result = await self._call(self.scheduler.evict, unit, contract, grace)
                if result == EVICT_BLOCKED:
                    blocked.append(unit)
                elif result != EVICT_GONE:
                    self.emit(EventKind.DRAIN_STARTED, **run.ev, **workload_fields(contract), attributes={
                        **run.base, "step": "signal", "unit": unit.unit_id, "signal": contract.drain_signal,
                        "checkpoint_mode": contract.checkpoint_mode})
            pending = blocked
            action = decide(Outcome.REFUSED if pending else Outcome.ANSWERED, advisory=run.plan.advisory,
                            now=self.monotonic(), deadline=workload.deadline)
            if action is Action.CONTINUE:
                break
            info["retries"] += len(pending)
            if action is not Action.RETRY:
                break
            await asyncio.sleep(RETRY_S)
        if pending and not self.local:  # the PDB held until the budget was spent: drain these locally
            info["blocked"] = len(pending)
            await self._act(run, action, f"eviction of {len(pending)} unit(s) refused until the drain budget "
                            "was spent", pending, only=contract)

    async def _wait_to_leave(self, workload: WorkloadPlan) -> list[Unit]:
        """Poll until the units are gone or the finish margin; return those still here."""
        left = list(workload.units)
        while not self.local and self.monotonic() < workload.finish_at:
            left = await self._remaining(workload.units)
            if not left:
                break
            await asyncio.sleep(POLL_S)
        return left

    async def _finish(self, run: DrainRun, workload: WorkloadPlan, left: list[Unit]) -> None:
        if not left or self.local:
            return
        contract = workload.contract
        for unit in left:
            await self._call(self.scheduler.finish, unit, contract)
            self.emit(EventKind.DRAIN_STARTED, **run.ev, **workload_fields(contract), attributes={
                **run.base, "step": "finish", "unit": unit.unit_id, "requeue": contract.requeue})

    async def _verify(self, contract: Contract, units: Iterable[Unit], deadline: float) -> int | None:
        """Wait until the units are gone or the deadline; return how many remain (None: cannot tell)."""
        units = tuple(units)
        stage = 0  # local finishes sent: SIGTERM at the finish margin, again (escalating) at the deadline
        while True:
            remaining: int | None
            if self.local:
                step = local_step(stage, self.monotonic(), deadline)
                if contract.ref in self.local_started and step in (LocalStep.FINISH, LocalStep.ESCALATE):
                    stage += 1
                    await asyncio.to_thread(self.actuator.finish, [LocalPlan(contract, deadline, units)])
                remaining = await asyncio.to_thread(self.actuator.remaining)
            else:  # SchedulerSlow propagates: the caller switches to the local path
                remaining = len(await self._remaining(units))
            if verify_settled(remaining, self.monotonic(), deadline):
                return remaining
            await asyncio.sleep(POLL_S)

    async def _record(self, run: DrainRun, info: dict[str, Any], contract: Contract, remaining: int | None,
                      units: Iterable[Unit]) -> None:
        report = run.report
        seconds = self.monotonic() - run.plan.received
        units = list(units)
        waste = drain_waste(contract, units, report.node_units, report.notice_at or self.now(), remaining)
        info.update(seconds=seconds, remaining=remaining, path=report.path, wasted_s=waste.wasted_s)
        attrs = {**run.base, "step": "verify", "units": info["units"], "remaining": remaining,
                 "drain_ms": round(seconds * 1000), "budget_s": contract.drain_budget_s, "path": report.path,
                 "verified": remaining is not None, **waste.attributes()}
        info["overrun"] = overran(remaining)
        kind = EventKind.OVERRUN if info["overrun"] else EventKind.DRAINED
        self.emit(kind, **run.ev, **workload_fields(contract), attributes=attrs)

    async def _verify_local(self, run: DrainRun) -> None:
        """Local path with no unit list: verify per contract through the actuator."""
        for contract in run.plan.local_scope():
            info: dict[str, Any] = {"units": None, "budget_s": contract.drain_budget_s, "retries": 0}
            run.report.workloads[contract.ref] = info
            remaining = await self._verify(contract, [], run.plan.deadline(contract))
            await self._record(run, info, contract, remaining, [])
