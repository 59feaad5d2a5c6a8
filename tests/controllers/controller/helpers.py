"""Shared builders for the controller tests: contracts, a scheduler stand-in, a simulated region, a clock."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from contracts.provider import Instance, LaunchRequest, ReclaimReceipt
from contracts.schema import Contract, ContractSpec
from contracts.tiers import resolve
from controllers.controller.claims import WorkItem
from tests.contracts.helpers import base

PARTITION = "r1/slurm-hpc"
T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def contract(name: str = "etl", tier: str = "T3", vcpu: int = 4, mem: int = 16, **fields: Any) -> Contract:
    doc = base(tier, workload=name, partition=PARTITION, resources={"vcpu": vcpu, "memory_gib": mem}, **fields)
    c, findings = resolve(ContractSpec.model_validate(doc))
    assert c is not None, findings
    return c


def contracts(*cs: Contract) -> dict[str, Contract]:
    return {c.ref: c for c in cs}


class StepClock:
    def __init__(self, start: datetime = T0) -> None:
        self.t = start

    def now(self) -> datetime:
        return self.t

    def advance(self, **kw: float) -> None:
        self.t += timedelta(**kw)


@dataclass
class FakeSource:
    """A scheduler stand-in: work items and the set of idle node names."""

    items: list[WorkItem] = field(default_factory=list)
    idle: set[str] = field(default_factory=set)

    def work(self) -> list[WorkItem]:
        return list(self.items)

    def idle_nodes(self) -> set[str]:
        return set(self.idle)

    def demand(self, ref: str | None, n: int, vcpu: float = 4, mem: float = 16, prefix: str = "j") -> None:
        self.items += [WorkItem("slurm", f"{prefix}{len(self.items) + i}", ref, vcpu, mem, "pending") for i in range(n)]


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
