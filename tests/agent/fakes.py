"""An in-memory scheduler for engine tests: units leave when evicted (or when finished), calls are logged."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from agent.drain.adapters import EVICT_BLOCKED, EVICT_DONE, EVICT_GONE
from agent.model import Contract, Unit


@dataclass
class FakeScheduler:
    name: str = "fake"
    units_on_node: list[Unit] = field(default_factory=list)
    latency_s: float = 0.0
    blocked_times: dict[str, int] = field(default_factory=dict)  # unit -> how many 429s before success
    leave_on_evict: bool = True
    leave_on_finish: bool = True
    calls: list[tuple[str, float, str]] = field(default_factory=list)
    ready_calls: list[tuple[bool, str]] = field(default_factory=list)
    graces: list[tuple[str, int]] = field(default_factory=list)  # (unit, grace_s) per eviction
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _log(self, what: str, arg: str = "") -> None:
        with self.lock:
            self.calls.append((what, time.monotonic(), arg))
        if self.latency_s:
            time.sleep(self.latency_s)

    def mark_unschedulable(self, reason: str) -> None:
        self._log("unschedulable", reason)

    def mark_schedulable(self, reason: str) -> None:
        self._log("schedulable", reason)

    def units(self) -> list[Unit]:
        self._log("units")
        with self.lock:
            return list(self.units_on_node)

    def evict(self, unit: Unit, contract: Contract, grace_s: int) -> str:
        self._log("evict", unit.unit_id)
        self.graces.append((unit.unit_id, grace_s))
        with self.lock:
            if unit not in self.units_on_node:
                return EVICT_GONE
            left = self.blocked_times.get(unit.unit_id, 0)
            if left:
                self.blocked_times[unit.unit_id] = left - 1
                return EVICT_BLOCKED
            if self.leave_on_evict:
                self.units_on_node.remove(unit)
        return EVICT_DONE

    def finish(self, unit: Unit, contract: Contract) -> None:
        self._log("finish", unit.unit_id)
        with self.lock:
            if self.leave_on_finish and unit in self.units_on_node:
                self.units_on_node.remove(unit)

    def set_ready(self, ready: bool, reason: str) -> None:
        self._log("ready" if ready else "not-ready", reason)
        self.ready_calls.append((ready, reason))

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]
