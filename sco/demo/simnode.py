"""A simulated scheduler for the demo's in-process agents, on nodes that have no real Slurm or Kubernetes
behind them. It implements the agent's own ``SchedulerAdapter`` protocol, so the real drain engine runs:
mark unschedulable, evict each unit with its contract's budget, verify, overrun. An evicted unit stops after
its checkpoint time (seconds, bounded by the budget); ``outage`` makes every call slower than the 800 ms the
engine waits, so the agent takes the local path, as it would with a scheduler that does not answer.

Each unit has a start time (``Unit.attributes["started_at"]``): a random moment between the instance's launch
(``booted_at``) and the simulated node's creation on the injected clock ``now`` (the node agent's clock in the
demo), never later — so the work a drain loses differs from unit to unit and from node to node. Without a
launch time the units start when the node is created.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from agent.drain.adapters import EVICT_DONE, EVICT_GONE, LocalPlan
from agent.model import STARTED_AT, Contract, Unit, format_time

__all__ = ["SimLocalActuator", "SimScheduler"]


@dataclass
class SimScheduler:
    node_name: str
    contract_ref: str
    units_on_node: int = 2
    seed: int = 0
    slow_s: float = 0.0  # > 0.8 s: the scheduler "does not answer" and the agent drains locally
    now: Callable[[], datetime] = lambda: datetime.now(UTC)  # the node's wall clock (the agent's, in the demo)
    booted_at: datetime | None = None  # the instance's launch (the provider's launched_at)
    name: str = "simulated"
    unschedulable: bool = False
    ready: bool = True
    _stops: dict[str, float] = field(default_factory=dict)
    _units: list[Unit] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._rng = random.Random(f"{self.seed}:{self.node_name}")
        up = self.now()
        booted = self.booted_at
        if booted is not None and booted.tzinfo is None:
            booted = booted.replace(tzinfo=UTC)  # the provider speaks UTC
        running_s = max(0.0, (up - booted).total_seconds()) if booted else 0.0
        self._units = [Unit(f"{self.node_name}-u{i}", self.contract_ref, attributes={STARTED_AT: format_time(
            up - timedelta(seconds=running_s * self._rng.random()))}) for i in range(self.units_on_node)]

    def _answer(self) -> None:
        if self.slow_s:
            time.sleep(self.slow_s)

    def mark_unschedulable(self, reason: str) -> None:
        """Mark the node unschedulable (the drain's first action)."""
        self._answer()
        self.unschedulable = True

    def mark_schedulable(self, reason: str) -> None:
        """Mark the node schedulable again."""
        self._answer()
        self.unschedulable = False

    def units(self) -> list[Unit]:
        """The node's units still running."""
        self._answer()
        now = time.monotonic()
        with self._lock:
            self._units = [u for u in self._units if self._stops.get(u.unit_id, now + 1) > now]
            return list(self._units)

    def evict(self, unit: Unit, contract: Contract, grace_s: int) -> str:
        """Ask a unit to stop within ``grace_s``; the eviction's outcome."""
        self._answer()
        with self._lock:
            if all(u.unit_id != unit.unit_id for u in self._units):
                return EVICT_GONE
            # the workload checkpoints and stops within a fraction of its budget
            stop_in = self._rng.uniform(0.5, max(0.6, grace_s / 20))
            self._stops[unit.unit_id] = time.monotonic() + stop_in
        return EVICT_DONE

    def finish(self, unit: Unit, contract: Contract) -> None:
        """Stop the unit now."""
        with self._lock:
            self._stops[unit.unit_id] = time.monotonic()

    def set_ready(self, ready: bool, reason: str) -> None:
        """Set the node's readiness."""
        self.ready = ready

    def local_stop(self) -> None:
        """What the local path does on a simulated node: the processes are signalled and stop."""
        with self._lock:
            for u in self._units:
                self._stops.setdefault(u.unit_id, time.monotonic() + self._rng.uniform(0.5, 2.0))


@dataclass
class SimLocalActuator:
    scheduler: SimScheduler
    name: str = "simulated-local"

    def start(self, plans: list[LocalPlan], reason: str) -> None:
        """The local path: the node's processes are signalled and stop."""
        self.scheduler.local_stop()

    def finish(self, plans: list[LocalPlan]) -> None:
        """Stop every unit still running now."""
        with self.scheduler._lock:
            for u in self.scheduler._units:
                self.scheduler._stops[u.unit_id] = time.monotonic()

    def remaining(self) -> int | None:
        """How many units still run."""
        now = time.monotonic()
        with self.scheduler._lock:
            return sum(1 for u in self.scheduler._units if self.scheduler._stops.get(u.unit_id, now + 1) > now)
