"""What the fleet-scale simulation measures: ``FleetFigures``, and ``_Latency`` — each claimed unit
from the moment its claim is visible (or a hall notice takes it) until our live instances of the workload cover
it, oldest first, in virtual time."""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta

__all__ = ["FleetFigures"]


@dataclass
class FleetFigures:
    instances: int = 0                 # reclaimable instances of ours just before the reclaim
    workloads: int = 0
    partitions: int = 0
    rounds: int = 0
    virtual_s: float = 0.0
    skipped_s: float = 0.0             # virtual seconds of idle passes skipped in the steady phase
    placement_s: list[float] = field(default_factory=list)     # per unit: claim visible -> instance launched
    steady_s: list[float] = field(default_factory=list)        # ... of the steady arrivals (after the build)
    replacement_s: list[float] = field(default_factory=list)   # per unit: hall notice -> replacement launched
    unplaced_units: int = 0            # arrivals never placed (their latency counted to the end)
    unreplaced_units: int = 0
    hall_reclaimed: int = 0            # our reclaimable instances the hall reclaim noticed
    floor_workloads: int = 0           # workloads with floor instances in the hall
    floor_restored: int = 0            # ... of which the floor is back in full outside the hall
    floor_restored_s: float | None = None   # reclaim -> the last of them back (None: one never was)
    floor_reported: int = 0            # ... of which the controller reported ``floor-restored`` after the reclaim
    floor_reported_s: float | None = None   # reclaim -> the last such report
    pass_wall_s: list[float] = field(default_factory=list)
    pass_cpu_s: list[float] = field(default_factory=list)
    round_wall_s: list[float] = field(default_factory=list)
    budget_spent: int = 0              # every partition's bucket: calls admitted ...
    budget_refused: int = 0            # ... and refused
    build_s: float = 0.0               # the build: start -> every build claim placed (or build_max_s)
    build_placed: bool = False         # ... every build claim was placed
    build_waiting: int = 0             # ... else the units still waiting then (they stay first in their queues)
    build_calls: int = 0               # calls admitted during the build
    built: int = 0                     # reclaimable instances of ours at the end of the build
    steady_claims: int = 0
    steady_calls: int = 0              # calls admitted from the steady phase's start to the reclaim
    reclaim_s: float = 0.0             # virtual seconds from the start to the hall reclaim
    after_calls: int = 0               # calls admitted after the reclaim
    late: list[str] = field(default_factory=list)   # traces of the latest steady claims
    causes: list[tuple[str, str, int]] = field(default_factory=list)   # (kind, cause, count): failures, trips
    notices_published: int = 0
    events: dict[str, int] = field(default_factory=dict)   # the controllers' events by kind
    processes: list[int] = field(default_factory=list)      # the controller processes' ids, one per partition
    spent_by_process: list[int] = field(default_factory=list)   # token budget calls each process was admitted
    wall_s: float = 0.0
    cpu_s: float = 0.0                 # the coordinator's (region, HTTP API, feeds)


@dataclass
class _Need:
    at: datetime
    units: int
    replacement: bool
    steady: bool = False


class _Latency:
    """Per workload, the units waiting (FIFO). A unit is served once the units our live instances of the
    workload hold (not under notice) cover its claim up to it: the oldest first."""

    def __init__(self, figures: FleetFigures) -> None:
        self.f = figures
        self.waiting: dict[str, deque[_Need]] = defaultdict(deque)
        self.steady_served: list[tuple[float, str, datetime, int]] = []   # (latency, workload, claim time, units)

    def need(self, workload: str, at: datetime, units: int, replacement: bool, steady: bool = False) -> None:
        if units > 0:
            self.waiting[workload].append(_Need(at, units, replacement, steady))

    last: datetime | None = None   # when a waiting unit was last served

    def _served(self, n: _Need, units: int, latency: float, workload: str = "") -> None:
        self.last = n.at + timedelta(seconds=latency)
        (self.f.replacement_s if n.replacement else self.f.placement_s).extend([latency] * units)
        if n.steady:
            self.f.steady_s.extend([latency] * units)
            self.steady_served.append((latency, workload, n.at, units))

    def building(self) -> bool:
        """A build claim is still waiting."""
        return any(not n.steady and not n.replacement for q in self.waiting.values() for n in q)

    def cover(self, workload: str, deficit: int, done: datetime) -> None:
        """The workload is ``deficit`` units short at ``done``: every waiting unit beyond that is served."""
        q = self.waiting[workload]
        extra = sum(n.units for n in q) - max(deficit, 0)
        while extra > 0 and q:
            n = q[0]
            take = min(extra, n.units)
            self._served(n, take, (done - n.at).total_seconds(), workload)
            n.units -= take
            extra -= take
            if n.units == 0:
                q.popleft()

    def finish(self, end: datetime) -> None:
        for w, q in self.waiting.items():
            for n in q:
                if n.replacement:
                    self.f.unreplaced_units += n.units
                else:
                    self.f.unplaced_units += n.units
                self._served(n, n.units, (end - n.at).total_seconds(), w)
