"""Shared builders for the controller tests: contracts, a scheduler stand-in, a simulated region, a clock."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from contracts.provider import Instance, LaunchRequest, ReclaimReceipt
from testkit.builders import T0


class StepClock:
    def __init__(self, start: datetime = T0) -> None:
        self.t = start

    def now(self) -> datetime:
        return self.t

    def advance(self, **kw: float) -> None:
        self.t += timedelta(**kw)


@dataclass
class CallLog:
    """Wraps a provider and records every mutating call with the clock's time (for budget assertions)."""

    inner: Any
    clock: Any
    calls: list[tuple[str, datetime, int]] = field(default_factory=list)
    requests: list[LaunchRequest] = field(default_factory=list)

    @property
    def region(self) -> str:
        return str(self.inner.region)

    def launch(self, request: LaunchRequest) -> tuple[Instance, ...]:
        self.calls.append(("launch", self.clock.now(), request.count))
        self.requests.append(request)
        return tuple(self.inner.launch(request))

    def terminate(self, instance_id: str) -> None:
        self.calls.append(("terminate", self.clock.now(), 1))
        self.inner.terminate(instance_id)

    def reclaim(self, ids: tuple[str, ...], *, drill: bool = True) -> ReclaimReceipt:
        self.calls.append(("reclaim", self.clock.now(), len(ids)))
        r: ReclaimReceipt = self.inner.reclaim(ids, drill=drill)
        return r

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def launches(self) -> list[tuple[str, datetime, int]]:
        return [c for c in self.calls if c[0] == "launch"]


def max_calls_in_window(times: Iterable[datetime], window: timedelta) -> int:
    ts = sorted(times)
    best = 0
    j = 0
    for i, t in enumerate(ts):
        while ts[j] <= t - window:
            j += 1
        best = max(best, i - j + 1)
    return best
