"""One partition controller of the fleet-scale simulation, in a process of its own (issue 18).

The production ``Controller`` as the replay builds it (``through_controller.partition_controller``), talking to
the simulated region over its HTTP API (``SimulatedProvider``, what ``sco sim region serve`` serves) through the
region's shared token budget (``RegionBudget``: one PostgreSQL row every partition's process draws from), on
its own PostgreSQL connection. The coordinator (``fleet.FleetSim``) sends one ``PassOrder`` per round over a
pipe: the virtual time of the pass, the claims that became visible and the notices seen since the last pass;
the worker runs one pass and answers with a ``PassResult`` — the pass's wall and CPU time, measured here.

The budget's clock is the pass's virtual start plus the wall time elapsed in the pass (the virtual clock runs
with the wall clock while a pass works; between passes the coordinator moves it by max(pass interval, the
slowest pass's wall time)), plus the partition's offset: partition k of P at k × interval / P, as unsynchronised
controllers' passes spread over the interval (all at the same instant, each round would see one burst of the
budget, 10 tokens, instead of an interval's refill).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from contracts.provider import Instance
from contracts.schema import Contract

from ..controller.budget import BudgetedProvider, RegionBudget
from ..planning import Strategy
from ..providers.simulated import SimulatedProvider
from ..simregion.clock import VirtualClock

__all__ = ["PassOrder", "PassResult", "WorkerSpec", "worker_main"]


@dataclass(frozen=True)
class WorkerSpec:
    partition: str
    contracts: Mapping[str, Contract]     # this partition's, by ref
    pg_url: str
    region_url: str
    region: str
    budget_rate: float
    start: datetime
    strategy: Strategy | None = None
    offset_s: float = 0.0     # where in the pass interval this partition's passes fall on the budget's clock


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

    def __init__(self, start: datetime, offset_s: float = 0.0) -> None:
        self.offset = offset_s
        self.virtual, self.wall = start.timestamp() + offset_s, time.perf_counter()

    def begin(self, at: datetime) -> None:
        self.virtual, self.wall = at.timestamp() + self.offset, time.perf_counter()

    def __call__(self) -> float:
        return self.virtual + (time.perf_counter() - self.wall)


def worker_main(spec: WorkerSpec, pipe: Any) -> None:
    """Run passes as ordered until the order is None; then answer with this process's (spent, refused)."""
    import psycopg

    from .through_controller import partition_controller

    try:
        conn = psycopg.connect(spec.pg_url, autocommit=True)
        budget_conn = psycopg.connect(spec.pg_url, autocommit=True)
        clock, budget_clock = VirtualClock(spec.start), _BudgetClock(spec.start, spec.offset_s)
        budget = RegionBudget(budget_conn, spec.region, spec.budget_rate, monotonic=budget_clock)
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
                                report.launched, report.terminated, report.throttled, report.leader)
            source.names = set(http.names)
        except Exception:
            result = PassResult(spec.partition, 0.0, 0.0, 0, 0, False, False, traceback.format_exc())
        pipe.send(result)
        if result.error:
            return
    pipe.send((budget.spent, budget.refused))
    conn.close()
    budget_conn.close()
