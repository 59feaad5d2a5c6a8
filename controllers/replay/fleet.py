"""The fleet-scale simulation (issue 18): a region of thousands of reclaimable instances of ours in partitions,
ONE PRODUCTION CONTROLLER PROCESS PER PARTITION (``fleet_worker``), the region's token budget shared (one
PostgreSQL row, ``RegionBudget``), one hall-wide reclaim.

The coordinator owns the simulated region on a ``VirtualClock`` (``through_controller``'s room-first region and
``_Run`` feeds, its exclusion watcher and outbox feed, the injected ranker every 5 min) and serves it over the
provider API (``RegionService``, which also publishes its notices to NATS when given a URL). The controllers run
in lockstep rounds: every process takes one pass at the round's virtual time, concurrently; then

    **the virtual clock advances by max(pass interval, the slowest pass's measured wall time)**,

so a slow pass shows up as latency. Claims arrive over the fill period (each workload's whole claim at one
random time); the hall reclaim gives every reclaimable instance in one hall its notice at once. What is measured
(``FleetFigures``) is in virtual time unless named wall or CPU.
"""

from __future__ import annotations

import asyncio
import functools
import math
import multiprocessing
import random
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from contracts.pools import PurchaseModel
from contracts.provider import OwnerTags
from contracts.schema import Contract
from contracts.subjects import EventKind

from ..controller.budget import RegionBudget
from ..controller.exclusion_stream import ExclusionStream
from ..controller.store import Store
from ..planning import Strategy, units_per_instance
from ..simregion.clock import VirtualClock
from ..simregion.config import RegionConfig
from ..simregion.region import SimulatedRegion
from ..simregion.service import RegionService
from .fleet_worker import PassOrder, PassResult, WorkerSpec, worker_main
from .through_controller import RANK_EVERY, Ranker, _Outbox, _Run

__all__ = ["FleetFigures", "FleetPlan", "FleetSim", "fleet_region", "fleet_workloads"]

START = datetime(2026, 10, 1, 6, tzinfo=UTC)   # morning: the region's demand rising, not at its peak
CLOCK_RULE = ("virtual clock: each round every partition's controller takes one pass at the round's virtual time "
              "(concurrently, one process each); the clock then advances by max(pass interval, the slowest pass's "
              "measured wall time), so a slow pass shows up as latency; the shared token budget's clock is the "
              "pass's virtual time + the wall time spent in the pass + the partition's offset (k x interval / P: "
              "unsynchronised controllers' passes spread over the interval)")


@dataclass(frozen=True)
class FleetPlan:
    instances: int = 20_000          # reclaimable instances of ours the claims are sized for
    partitions: int = 10
    per_workload: int = 20           # instances per workload: workloads = instances / per_workload
    pass_interval_s: float = 5.0     # the live controller's default
    fill_s: float = 300.0            # the fleet's build: each workload's claim arrives once in [30 s, fill_s]
    steady_s: float = 150.0          # then steady arrivals (claims growing by ``steady_share``) for this long
    steady_share: float = 0.1
    reclaim_at_s: float = 480.0      # the hall-wide reclaim
    after_s: float = 900.0           # simulated after the reclaim at most (the floor's promise is 15 min) ...
    settle_s: float = 60.0           # ... and at least, then until every floor and replacement is back (or
    stall_s: float = 180.0           # ... nothing waiting was served for this long: counted as never served)
    hall: str = "h1"
    seed: int = 18
    budget_rate: float = 10.0        # ADR-12: mutating calls a second per region
    floor_share: float = 0.2         # share of workloads on T2 (a 10 % floor); the rest T3 (no floor)
    region_per_instance: float = 1 / 2800   # slot_scale per instance of ours: room for the fleet in two halls


def fleet_region(plan: FleetPlan) -> RegionConfig:
    return RegionConfig(seed=plan.seed, slot_scale=max(1.0, plan.instances * plan.region_per_instance),
                        occupancy=0.35, room_first=True, hall_reclaims_per_30d=0.0, quota_instances=10**7,
                        quota_vcpu=10**9)


def fleet_workloads(plan: FleetPlan, region: str) -> tuple[dict[str, Contract], list[tuple[float, str, int, bool]]]:
    """The contracts by ref and the claim arrivals (virtual seconds after the start, ref, units, steady): 4-vCPU
    units, ``per_workload`` × 4 units each (the planner packs several in an instance), spread over the
    partitions; the fleet's build in [30 s, fill_s], then steady growth: ``steady_share`` more units, in claims of
    ``per_workload`` units by random workloads, through ``steady_s`` (before the reclaim)."""
    from contracts.schema import ContractSpec
    from contracts.tiers import resolve

    rng = random.Random(plan.seed)
    n = max(plan.partitions, round(plan.instances / plan.per_workload))
    contracts: dict[str, Contract] = {}
    arrivals = []
    for k in range(n):
        tier = "T2" if rng.random() < plan.floor_share else "T3"
        doc: dict[str, Any] = {
            "apiVersion": "sco/v1", "workload": f"w{k:05d}", "version": 1, "owner": "owner@example.org",
            "business_unit": ("analytics", "research", "engineering", "commerce", "platform")[k % 5],
            "scheduler": "slurm", "partition": f"{region}/c{k % plan.partitions:02d}", "tier": tier,
            "resources": {"vcpu": 4, "memory_gib": 16}}
        if tier == "T2":
            doc["fallback"] = {"spend_cap_24h_eur": 100, "approver": "budget@example.org"}
        c, findings = resolve(ContractSpec.model_validate(doc))
        if c is None:
            raise ValueError(f"fleet contract {doc['workload']} does not resolve: {findings}")
        contracts[c.ref] = c
        arrivals.append((rng.uniform(30.0, plan.fill_s), c.ref, plan.per_workload * 4, False))
    refs = sorted(contracts)
    for _ in range(round(n * 4 * plan.steady_share)):
        at = rng.uniform(plan.fill_s + 10.0, plan.fill_s + plan.steady_s)
        arrivals.append((at, rng.choice(refs), plan.per_workload, True))
    return contracts, sorted(arrivals)


@dataclass
class FleetFigures:
    instances: int = 0                 # reclaimable instances of ours just before the reclaim
    workloads: int = 0
    partitions: int = 0
    rounds: int = 0
    virtual_s: float = 0.0
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
    budget_spent: int = 0
    budget_refused: int = 0
    notices_published: int = 0
    events: dict[str, int] = field(default_factory=dict)   # the controllers' events by kind
    processes: list[int] = field(default_factory=list)      # the controller processes' ids, one per partition
    spent_by_process: list[int] = field(default_factory=list)   # token budget calls each process was admitted
    wall_s: float = 0.0
    cpu_s: float = 0.0                 # the coordinator's (region, HTTP API, feeds)


@functools.lru_cache(maxsize=65536)
def _workload_of(tags: tuple[str, ...]) -> str:
    return OwnerTags.parse(tags).get("workload") or ""


def end_of(plan: FleetPlan) -> datetime:
    return START + timedelta(seconds=plan.reclaim_at_s + plan.after_s)


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

    def need(self, workload: str, at: datetime, units: int, replacement: bool, steady: bool = False) -> None:
        if units > 0:
            self.waiting[workload].append(_Need(at, units, replacement, steady))

    last: datetime | None = None   # when a waiting unit was last served

    def _served(self, n: _Need, units: int, latency: float) -> None:
        self.last = n.at + timedelta(seconds=latency)
        (self.f.replacement_s if n.replacement else self.f.placement_s).extend([latency] * units)
        if n.steady:
            self.f.steady_s.extend([latency] * units)

    def cover(self, workload: str, deficit: int, done: datetime) -> None:
        """The workload is ``deficit`` units short at ``done``: every waiting unit beyond that is served."""
        q = self.waiting[workload]
        extra = sum(n.units for n in q) - max(deficit, 0)
        while extra > 0 and q:
            n = q[0]
            take = min(extra, n.units)
            self._served(n, take, (done - n.at).total_seconds())
            n.units -= take
            extra -= take
            if n.units == 0:
                q.popleft()

    def finish(self, end: datetime) -> None:
        for q in self.waiting.values():
            for n in q:
                if n.replacement:
                    self.f.unreplaced_units += n.units
                else:
                    self.f.unplaced_units += n.units
                self._served(n, n.units, (end - n.at).total_seconds())


class _Service:
    """The region's HTTP API (and NATS publisher) on an event loop in a thread of the coordinator."""

    def __init__(self, region: SimulatedRegion, nats_url: str | None) -> None:
        self.service = RegionService(region, nats_url=nats_url, api_calls_per_s=1e9)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.call(self.service.start())

    def call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        self.call(self.service.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


class FleetSim:
    """One run: the region, its API, one process per partition, rounds until ``after_s`` past the reclaim.
    ``before_reclaim`` gets the ids of our instances the hall reclaim will take, before it happens (e.g. to
    subscribe to their notice subjects); ``published`` gets the wall-clock bounds of
    the round's NATS publish that carried the hall's notices."""

    def __init__(self, plan: FleetPlan, pg_url: str, *, nats_url: str | None = None, ranker: Ranker | None = None,
                 strategy: Strategy | None = None, progress: Callable[[str], None] | None = None,
                 before_reclaim: Callable[[list[str]], None] | None = None,
                 published: Callable[[float, float], None] | None = None) -> None:
        import psycopg

        self.plan, self.pg_url, self.ranker, self.strategy = plan, pg_url, ranker, strategy
        self.nats_url = nats_url
        self.progress, self.before_reclaim, self.published = progress, before_reclaim, published
        self.config = fleet_region(plan)
        self.contracts, self.arrivals = fleet_workloads(plan, self.config.region)
        self.by_workload = {c.workload: c for c in self.contracts.values()}
        self.conn = psycopg.connect(pg_url, autocommit=True)
        begin = START - timedelta(hours=1)
        self.clock = VirtualClock(begin)
        self.region = SimulatedRegion(self.config, self.clock, start=begin)
        self.run = _Run(self.region, self.contracts, {w: plan.per_workload * 4 for w in self.by_workload})
        self.clock.advance_to(START)
        self.region.sync()                    # the warm-up: an hour of the region alone
        self.run.events.clear()
        self.f = FleetFigures(workloads=len(self.contracts), partitions=plan.partitions)
        self.latency = _Latency(self.f)
        self.pools = {s.pool.pool_id: s.pool for s in self.region.engine.specs}
        self.notices: dict[str, list[tuple[str, datetime]]] = defaultdict(list)
        self.floor_workloads: set[str] = set()
        self.claimed: dict[str, int] = defaultdict(int)   # units visible so far, per workload
        self.noticed: set[str] = set()              # our instances the hall reclaim gave a notice
        self.floor_before: dict[str, int] = {}      # workload with floor in the hall -> its floor, units
        self.floor_at: dict[str, float] = {}        # workload -> seconds after the reclaim its floor was back
        self.reclaim_time = end_of(plan)

    def figures(self) -> FleetFigures:
        wall, cpu = time.perf_counter(), time.process_time()
        RegionBudget(self.conn, self.config.region, self.plan.budget_rate,
                     monotonic=lambda: self.clock.now().timestamp()).ensure()
        service = _Service(self.region, self.nats_url)
        workers: list[tuple[Any, Any]] = []
        try:
            workers = self._spawn(service.service.url)
            self._rounds(workers, service)
            for _, pipe in workers:
                pipe.send(None)
            self.f.spent_by_process = [pipe.recv()[0] for _, pipe in workers]
            self.f.processes = [proc.pid for proc, _ in workers]
            self.f.budget_spent, self.f.budget_refused = RegionBudget(self.conn, self.config.region).totals()
            self._floor()
        finally:
            for proc, _ in workers:
                proc.join(timeout=30)
                if proc.is_alive():
                    proc.kill()
            service.close()
            self.conn.close()
        self.f.wall_s, self.f.cpu_s = time.perf_counter() - wall, time.process_time() - cpu
        return self.f

    def _spawn(self, url: str) -> list[tuple[Any, Any]]:
        ctx = multiprocessing.get_context("spawn")
        out = []
        partitions = sorted({c.partition for c in self.contracts.values()})
        for k, p in enumerate(partitions):
            mine = {ref: c for ref, c in self.contracts.items() if c.partition == p}
            spec = WorkerSpec(p, mine, self.pg_url, url, self.config.region, self.plan.budget_rate, START,
                              self.strategy, offset_s=k * self.plan.pass_interval_s / len(partitions))
            here, there = ctx.Pipe()
            proc = ctx.Process(target=worker_main, args=(spec, there), name=f"fleet-{p}", daemon=True)
            proc.start()
            out.append((proc, here))
        for _, pipe in out:
            ready: PassResult = pipe.recv()
            if ready.error:
                raise RuntimeError(f"fleet worker {ready.partition} failed to start:\n{ready.error}")
        return out

    def _rounds(self, workers: list[tuple[Any, Any]], service: _Service) -> None:
        plan, now = self.plan, START
        reclaim_at = START + timedelta(seconds=plan.reclaim_at_s)
        end = reclaim_at + timedelta(seconds=plan.after_s)
        stream = ExclusionStream(Store(self.conn, self.config.region, "fleet/watcher", actor="exclusion-watcher"))
        outbox = _Outbox(self.conn, stream)
        arrivals, ranked_at, reclaimed = deque(self.arrivals), None, False
        while now < end:
            if self.ranker is not None and (ranked_at is None or now - ranked_at >= RANK_EVERY):
                self.ranker(now, self.run.feed_list(timedelta(minutes=30)))
                ranked_at = now
            if not reclaimed and now >= reclaim_at:
                self._hall_reclaim(service, stream, now)
                reclaimed = True
            grow: dict[str, list[tuple[str, int]]] = defaultdict(list)
            while arrivals and START + timedelta(seconds=arrivals[0][0]) <= now:
                t, ref, units, steady = arrivals.popleft()
                c = self.contracts[ref]
                grow[c.partition].append((ref, units))
                self.latency.need(c.workload, START + timedelta(seconds=t), units, replacement=False, steady=steady)
                self.claimed[c.workload] += units
            results = self._pass(workers, now, grow)
            walls = {r.partition: r.wall_s for r in results}
            self._launches(now, walls, stream)
            if reclaimed:
                self._floor_back(now, walls)
            outbox.feed(now)
            step = max(plan.pass_interval_s, max(walls.values()))
            self.f.round_wall_s.append(max(walls.values()))
            self.f.rounds += 1
            now += timedelta(seconds=step)
            self.clock.advance_to(now)
            service.call(service.service.step())
            self._region_events(stream, now)
            if reclaimed and self._settled(now, reclaim_at):
                break
            if self.progress is not None and self.f.rounds % 20 == 0:
                self._report(now, end, results)
        outbox.feed(now)
        self.f.events = dict(outbox.kinds)
        self.latency.finish(now)
        self.f.virtual_s = (now - START).total_seconds()

    def _pass(self, workers: list[tuple[Any, Any]], now: datetime,
              grow: Mapping[str, list[tuple[str, int]]]) -> list[PassResult]:
        for proc, pipe in workers:
            partition = proc.name.removeprefix("fleet-")
            pipe.send(PassOrder(now, tuple(grow.get(partition, ())), tuple(self.notices.pop(partition, ()))))
        results = [pipe.recv() for _, pipe in workers]
        for r in results:
            if r.error:
                raise RuntimeError(f"fleet controller {r.partition} failed its pass at {now}:\n{r.error}")
            self.f.pass_wall_s.append(r.wall_s)
            self.f.pass_cpu_s.append(r.cpu_s)
        return results

    def _launches(self, now: datetime, walls: Mapping[str, float], stream: ExclusionStream) -> None:
        """After a round: the region's events of ours to the watcher; each workload's waiting units served as far
        as what it holds covers its claim (a launch is done when its pass is)."""
        for ev in self.run.events:
            if self.by_workload.get(ev.workload or "") is not None:
                stream.feed(self.region.to_event(ev), now)
        self.run.events.clear()
        held = self._held()
        for w, q in self.latency.waiting.items():
            if q:
                done = now + timedelta(seconds=walls.get(self.by_workload[w].partition, 0.0))
                self.latency.cover(w, self.claimed[w] - held.get(w, 0), done)

    def _held(self) -> dict[str, int]:
        """Units our live instances hold per workload (any purpose), those under notice not counted."""
        engine = self.region.engine
        out: dict[str, int] = defaultdict(int)
        for inst in engine.by_id.values():
            if inst.owned and not inst.doomed:
                c = self.by_workload.get(self._workload(inst))
                if c is not None:
                    out[c.workload] += units_per_instance(engine.specs[inst.pool].pool, c)
        return out

    def _region_events(self, stream: ExclusionStream, now: datetime) -> None:
        """What the region did while the clock moved: to the exclusion watcher, notices to their controller."""
        for ev in self.run.events:
            if not ev.workload:
                continue
            stream.feed(self.region.to_event(ev), now)
            c = self.by_workload.get(ev.workload)
            if c is not None and ev.kind is EventKind.NOTICE and not ev.drill:
                self.notices[c.partition].append((c.workload, self.region.engine.at(ev.time)))
        self.run.events.clear()

    def _hall_reclaim(self, service: _Service, stream: ExclusionStream, now: datetime) -> None:
        """Every reclaimable instance in the hall noticed at once; its notices published in one round."""
        engine, hall = self.region.engine, self.plan.hall
        reclaimable = [i for i, s in enumerate(engine.specs) if s.pool.purchase_model is PurchaseModel.RECLAIMABLE]
        ours = [inst for i in reclaimable for inst in engine.live[i].values() if inst.owned and not inst.doomed]
        self.f.instances = len(ours)
        self.floor_workloads = {self._workload(inst) for i, s in
                                enumerate(engine.specs) if s.pool.hall == hall for inst in engine.live[i].values()
                                if inst.owned and inst.metadata.get("sco_purpose") == "floor"}
        units = self.plan.per_workload * 4
        self.floor_before = {w: math.ceil(units * self.by_workload[w].floor_pct / 100) for w in self.floor_workloads}
        victims = {inst.id: inst for i in reclaimable if engine.specs[i].pool.hall == hall
                   for inst in engine.live[i].values() if not inst.doomed}
        if self.before_reclaim is not None:
            self.before_reclaim([inst.id for inst in victims.values() if inst.owned])
        before = self._held()
        for iid in self.region.hall_reclaim(hall):   # the no-notice share is gone already
            inst = victims[iid]
            if inst.owned:
                self.f.hall_reclaimed += 1
                if iid in engine.by_id:
                    self.noticed.add(iid)
        after = self._held()
        for w in self.by_workload:   # what the reclaim took below the claim waits for a replacement
            short_before = max(self.claimed[w] - before.get(w, 0), 0)
            self.latency.need(w, now, max(self.claimed[w] - after.get(w, 0), 0) - short_before, replacement=True)
        wall = time.time()
        service.call(service.service.step())        # the region's relay publishes the hall's notices
        if self.published is not None:
            self.published(wall, time.time())
        self.f.notices_published = service.service.published["notices"]
        self.reclaim_time = now
        self._region_events(stream, now)

    def _floor_units(self, outside: str | None) -> dict[str, int]:
        """Units our live floor instances hold, per workload (outside hall ``outside`` when given)."""
        engine = self.region.engine
        out: dict[str, int] = defaultdict(int)
        for i, s in enumerate(engine.specs):
            if s.pool.purchase_model is PurchaseModel.RECLAIMABLE or s.pool.hall == outside:
                continue
            for inst in engine.live[i].values():
                c = self.by_workload.get(self._workload(inst)) if inst.owned else None
                if c is not None and not inst.doomed and inst.metadata.get("sco_purpose") == "floor":
                    out[c.workload] += units_per_instance(s.pool, c)
        return out

    def _floor_back(self, now: datetime, walls: Mapping[str, float]) -> None:
        """A workload's floor is back when its floor instances outside the hall hold its contract's floor:
        ceil(claim units × floor_pct / 100), as the planner sizes it."""
        have = self._floor_units(self.plan.hall)
        for w, wanted in self.floor_before.items():
            if w not in self.floor_at and have.get(w, 0) >= wanted:
                done = now + timedelta(seconds=walls.get(self.by_workload[w].partition, 0.0))
                self.floor_at[w] = (done - self.reclaim_time).total_seconds()

    def _settled(self, now: datetime, reclaim_at: datetime) -> bool:
        waiting = any(q for q in self.latency.waiting.values())
        last = self.latency.last or reclaim_at
        stalled = (now - max(last, reclaim_at)).total_seconds() >= self.plan.stall_s
        return (now - reclaim_at).total_seconds() >= self.plan.settle_s and (not waiting or stalled) and \
            len(self.floor_at) == len(self.floor_before)

    @staticmethod
    def _workload(inst: Any) -> str:
        return _workload_of(inst.tags)

    def _floor(self) -> None:
        """Floor restored: the controllers' own ``floor-restored`` events after the reclaim, for every workload
        that had floor instances in the hall."""
        self.f.floor_workloads = len(self.floor_workloads)
        rows = self.conn.execute(
            "SELECT e->>'workload', min((e->>'time')::timestamptz) FROM (SELECT convert_from(payload, 'UTF8')::jsonb "
            "AS e FROM outbox) x WHERE e->>'kind' = 'floor-restored' AND (e->>'time')::timestamptz >= %s "
            "GROUP BY 1", (self.reclaim_time,)).fetchall()
        reported = {w: t for w, t in rows if w in self.floor_workloads}
        self.f.floor_reported = len(reported)
        if reported:
            self.f.floor_reported_s = max((t - self.reclaim_time).total_seconds() for t in reported.values())
        self.f.floor_restored = len(self.floor_at)
        if self.floor_at and len(self.floor_at) == len(self.floor_workloads):
            self.f.floor_restored_s = max(self.floor_at.values())

    def _report(self, now: datetime, end: datetime, results: list[PassResult]) -> None:
        assert self.progress is not None
        waiting = sum(n.units for q in self.latency.waiting.values() for n in q)
        self.progress(f"[{self.plan.instances} inst] virtual {(now - START).total_seconds():.0f}/"
                      f"{(end - START).total_seconds():.0f} s, round {self.f.rounds}, slowest pass "
                      f"{max(r.wall_s for r in results):.2f} s wall, units placed {len(self.f.placement_s)}, "
                      f"replaced {len(self.f.replacement_s)}, waiting {waiting}, launched this round "
                      f"{sum(r.launched for r in results)}")
