"""One partition controller of the fleet-scale simulation, in a process of its own.

The production ``Controller`` as the replay builds it (``through_controller.partition_controller``), talking to
the simulated region over its HTTP API (``SimulatedProvider``, what ``sco sim region serve`` serves) through its
partition's share of the region's token budget (ADR-12: ``split_budget``, split statically, one bucket per
partition), on its own PostgreSQL connection. The coordinator (``fleet.FleetSim``) sends one ``PassOrder`` per
round over a pipe: the virtual time of the pass, the claims that became visible and the notices seen since the
last pass; the worker runs one pass and answers with a ``PassResult`` — the pass's wall and CPU time, measured
here, and its bucket's calls so far.

The bucket's clock is the pass's virtual start plus the wall time elapsed in the pass (the virtual clock runs
with the wall clock while a pass works; between passes the coordinator moves it by max(pass interval, the
slowest pass's wall time), so it never runs backwards). The bucket is the partition's own: no other process
moves its clock, so the order in which the round's passes run in wall time cannot lose refill (a shared row's
clock can: a pass that draws later in wall time but earlier on the clock finds the row's clock ahead of it).
Its burst is one pass interval's worth: the pass ends at its first ``Throttled`` and the next comes an interval
later, so a one-second burst would drop the refill between passes.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from contracts.provider import Instance
from contracts.schema import Contract

from ..controller.budget import BudgetedProvider, split_budget
from ..planning import Strategy
from ..providers.budget import TokenBucket
from ..providers.simulated import SimulatedProvider
from ..simregion.clock import VirtualClock

__all__ = ["PassOrder", "PassResult", "WorkerSpec", "partition_budget", "worker_main"]


@dataclass(frozen=True)
class WorkerSpec:
    partition: str
    contracts: Mapping[str, Contract]     # this partition's, by ref
    pg_url: str
    region_url: str
    region: str
    budget_rate: float                    # the region's: split statically between ``partitions``
    start: datetime
    partitions: tuple[str, ...] = ()      # every partition of the region (default: this one alone)
    pass_interval_s: float = 5.0          # the bucket's burst: one interval's worth
    strategy: Strategy | None = None


@dataclass(frozen=True)
class PassOrder:
    at: datetime                                   # the pass's virtual time
    grow: tuple[tuple[str, int], ...] = ()         # (contract ref, units) visible since the last pass
    notices: tuple[tuple[str, datetime], ...] = ()  # (workload, notice time): the breach-rate signal


@dataclass(frozen=True)
class PassResult:
    partition: str
    wall_s: float
    cpu_s: float
    launched: int
    terminated: int
    throttled: bool
    leader: bool
    error: str | None = None
    spent: int = 0            # the partition's bucket: calls admitted so far ...
    refused: int = 0          # ... and refused (``Throttled``) so far


class _Listing(SimulatedProvider):
    """The HTTP provider, remembering the names of the instances its last listing showed (the scheduler double
    reports every node idle: the names it knows)."""

    def __init__(self, base_url: str, *, region: str, timeout_s: float) -> None:
        super().__init__(base_url, region=region, timeout_s=timeout_s)
        self.names: set[str] = set()

    def list_instances(self, tags: Mapping[str, str] | None = None) -> tuple[Instance, ...]:
        out = super().list_instances(tags)
        self.names = {i.name for i in out}
        return out


class _BudgetClock:
    """Virtual seconds: the pass's virtual start plus the wall time since the pass began."""

    def __init__(self, start: datetime) -> None:
        self.virtual, self.wall = start.timestamp(), time.perf_counter()

    def begin(self, at: datetime) -> None:
        self.virtual, self.wall = at.timestamp(), time.perf_counter()

    def __call__(self) -> float:
        return self.virtual + (time.perf_counter() - self.wall)


def partition_budget(spec: WorkerSpec, clock: Callable[[], float]) -> TokenBucket:
    """This partition's bucket of the region's static split (ADR-12), on ``clock``: region rate / P calls a second,
    burst one pass interval's worth."""
    return split_budget(spec.budget_rate, spec.partitions or (spec.partition,), monotonic=clock,
                        burst_s=spec.pass_interval_s)[spec.partition]


def worker_main(spec: WorkerSpec, pipe: Any) -> None:
    """Run passes as ordered until the order is None; then answer with this process's (spent, refused)."""
    import psycopg

    from .through_controller import partition_controller

    try:
        conn = psycopg.connect(spec.pg_url, autocommit=True)
        clock, budget_clock = VirtualClock(spec.start), _BudgetClock(spec.start)
        budget = partition_budget(spec, budget_clock)
        http = _Listing(spec.region_url, region=spec.region, timeout_s=120.0)
        ctl, source = partition_controller(BudgetedProvider(http, budget), conn, spec.partition, spec.contracts,
                                           {}, clock, strategy=spec.strategy, holder=f"fleet:{spec.partition}")
    except Exception:
        pipe.send(PassResult(spec.partition, 0.0, 0.0, 0, 0, False, False, traceback.format_exc()))
        return
    pipe.send(PassResult(spec.partition, 0.0, 0.0, 0, 0, False, False))   # ready
    while (order := pipe.recv()) is not None:
        try:
            clock.advance_to(order.at)
            for ref, units in order.grow:
                source.add(spec.contracts[ref], units)
            for workload, at in order.notices:
                ctl.record_notice(workload, at)
            budget_clock.begin(order.at)
            wall, cpu = time.perf_counter(), time.process_time()
            report = ctl.step()
            result = PassResult(spec.partition, time.perf_counter() - wall, time.process_time() - cpu,
                                report.launched, report.terminated, report.throttled, report.leader,
                                spent=budget.spent, refused=budget.refused)
            source.names = set(http.names)
        except Exception:
            result = PassResult(spec.partition, 0.0, 0.0, 0, 0, False, False, traceback.format_exc())
        pipe.send(result)
        if result.error:
            return
    pipe.send((budget.spent, budget.refused))
    conn.close()
