"""The fleet-scale simulation: a region of thousands of reclaimable instances of ours in partitions,
ONE PRODUCTION CONTROLLER PROCESS PER PARTITION (``fleet_worker``), the region's token budget split statically
between them (ADR-12, ``split_budget``: a bucket each), one hall-wide reclaim.

The coordinator owns the simulated region on a ``VirtualClock`` (``through_controller``'s room-first region and
``ReplayRun`` feeds, its exclusion watcher and outbox feed, the injected ranker every 5 min) and serves it over the
provider API (``RegionService``, which also publishes its notices to NATS when given a URL). The controllers run
in lockstep rounds: every process takes one pass at the round's virtual time, concurrently; then

    **the virtual clock advances by max(pass interval, the slowest pass's measured wall time)**,

so a slow pass shows up as latency. The scenario (``fleet_scenario``): the build (each workload's whole claim
at one random time, then as long as the budget needs to place them), steady arrivals, the hall reclaim (every
reclaimable instance in one hall its notice at once). What is measured (``FleetFigures``) is in virtual time
unless named wall or CPU.
"""

from __future__ import annotations

import asyncio
import functools
import math
import multiprocessing
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from contracts.pools import PurchaseModel
from contracts.provider import OwnerTags
from contracts.subjects import EventKind

from ..controller.exclusion_stream import ExclusionStream
from ..controller.store import Store
from ..planning import Strategy, units_per_instance
from ..simregion.clock import VirtualClock
from ..simregion.region import SimulatedRegion
from ..simregion.service import RegionService
from .fleet_figures import FleetFigures, _Latency
from .fleet_scenario import FleetPlan, fleet_region, fleet_workloads, steady_arrivals
from .fleet_worker import PassOrder, PassResult, WorkerSpec, worker_main
from .replay_run import OutboxRelay, Ranker, ReplayRun
from .through_controller import RANK_EVERY

__all__ = ["CLOCK_RULE", "FleetFigures", "FleetPlan", "FleetSim", "fleet_region", "fleet_workloads"]

START = datetime(2026, 10, 1, 6, tzinfo=UTC)   # morning: the region's demand rising, not at its peak
CLOCK_RULE = ("virtual clock: each round every partition's controller takes one pass at the round's virtual time "
              "(concurrently, one process each); the clock then advances by max(pass interval, the slowest pass's "
              "measured wall time), so a slow pass shows up as latency; in the steady phase, while no unit waits, "
              "the passes before the one at or after the next claim's time are skipped (whole intervals, so a "
              "claim waits for its first pass as it would without the skip). Token budget: ADR-12's static split, one "
              "bucket per partition (region rate / P calls/s, burst one pass interval's worth), each on its own "
              "clock = its pass's virtual start + the wall time spent in the pass; no other process moves that "
              "clock, so the wall order of a round's passes cannot lose refill (a shared row's clock could), and "
              "the burst of an interval keeps the refill between passes (a pass ends at its first Throttled)")


@functools.lru_cache(maxsize=65536)
def _workload_of(tags: tuple[str, ...]) -> str:
    return OwnerTags.parse(tags).get("workload") or ""


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
        self.contracts, build = fleet_workloads(plan, self.config.region)
        self.arrivals = [(t, ref, units, False) for t, ref, units in build]   # + the steady ones once they start
        self.by_workload = {c.workload: c for c in self.contracts.values()}
        self.conn = psycopg.connect(pg_url, autocommit=True)
        begin = START - timedelta(hours=1)
        self.clock = VirtualClock(begin)
        self.region = SimulatedRegion(self.config, self.clock, start=begin)
        self.run = ReplayRun(self.region, self.contracts, {w: plan.claim_units for w in self.by_workload})
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
        self.reclaim_time = START + timedelta(seconds=plan.build_max_s + plan.steady_s)   # set by the reclaim
        self.history: list[tuple[datetime, dict[str, PassResult]]] = []   # each round's passes, for the traces

    def figures(self) -> FleetFigures:
        """Run the simulation (one process per partition) and measure it; its figures."""
        wall, cpu = time.perf_counter(), time.process_time()
        service = _Service(self.region, self.nats_url)
        workers: list[tuple[Any, Any]] = []
        try:
            workers = self._spawn(service.service.url)
            self._rounds(workers, service)
            self.f.late = self._trace_late()
            self.f.causes = self.conn.execute(
                "SELECT e->>'kind', left(regexp_replace(e->>'cause', '[0-9a-f-]{8,}|[0-9.]+', 'N', 'g'), 90) c, "
                "count(*) FROM (SELECT convert_from(payload, 'UTF8')::jsonb AS e FROM outbox) x WHERE e->>'kind' IN "
                "('launch-failed', 'breaker-tripped', 'excluded') GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 8").fetchall()
            for _, pipe in workers:
                pipe.send(None)
            totals = [pipe.recv() for _, pipe in workers]
            self.f.spent_by_process = [spent for spent, _ in totals]
            self.f.processes = [proc.pid for proc, _ in workers]
            self.f.budget_spent, self.f.budget_refused = sum(self.f.spent_by_process), sum(r for _, r in totals)
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
        for p in partitions:
            mine = {ref: c for ref, c in self.contracts.items() if c.partition == p}
            spec = WorkerSpec(p, mine, self.pg_url, url, self.config.region, self.plan.budget_rate, START,
                              tuple(partitions), self.plan.pass_interval_s, self.strategy)
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
        plan, now, spent = self.plan, START, 0
        reclaim_at = START + timedelta(seconds=plan.build_max_s + plan.steady_s)   # set when the build ends
        end = reclaim_at + timedelta(seconds=plan.after_s)
        stream = ExclusionStream(Store(self.conn, self.config.region, "fleet/watcher", actor="exclusion-watcher"))
        outbox = OutboxRelay(self.conn, stream)
        arrivals, ranked_at, reclaimed, building = deque(self.arrivals), None, False, True
        placed, progressed = 0, now   # build units placed so far; when the build last placed one
        while now < end:
            if self.ranker is not None and (ranked_at is None or now - ranked_at >= RANK_EVERY):
                self.ranker(now, self.run.feed_list(timedelta(minutes=30)))()   # in force at once: this
                # simulation times the fleet's passes, not the ranking's latency
                ranked_at = now
            if not reclaimed and now >= reclaim_at:
                self._hall_reclaim(service, stream, now)
                self.f.steady_calls, reclaimed = spent - self.f.build_calls, True
            results = self._pass(workers, now, self._arrive(arrivals, now))
            spent = sum(r.spent for r in results)
            self.history.append((now, {r.partition: r for r in results}))
            walls = {r.partition: r.wall_s for r in results}
            self._launches(now, walls, stream)
            if reclaimed:
                self._floor_back(now, walls)
            outbox.feed(now)
            step = max(plan.pass_interval_s, max(walls.values()))
            self.f.round_wall_s.append(max(walls.values()))
            self.f.rounds += 1
            now += timedelta(seconds=step)
            if not building and not reclaimed:   # the steady phase: idle passes skipped, on the pass grid
                now += timedelta(seconds=self._idle(now, arrivals, reclaim_at))
            if len(self.f.placement_s) > placed:
                placed, progressed = len(self.f.placement_s), now
            if building and ((not arrivals and not self.latency.building())
                             or (not arrivals and (now - progressed).total_seconds() >= plan.stall_s)
                             or (now - START).total_seconds() >= plan.build_max_s):
                building, reclaim_at = False, self._steady(now, arrivals, spent)
                end = reclaim_at + timedelta(seconds=plan.after_s)
            self.clock.advance_to(now)
            service.call(service.service.step())
            self._region_events(stream, now)
            if reclaimed and self._settled(now, reclaim_at):
                break
            if self.progress is not None and self.f.rounds % 20 == 0:
                self._report(now, end, results)
        outbox.feed(now)
        self.f.events = dict(outbox.kinds)
        self.f.after_calls = spent - self.f.build_calls - self.f.steady_calls
        self.latency.finish(now)
        self.f.virtual_s = (now - START).total_seconds()

    def _idle(self, now: datetime, arrivals: deque[tuple[float, str, int, bool]], until: datetime) -> float:
        """Seconds of whole pass intervals to skip from ``now`` when no unit waits: up to the first pass at or
        after the next claim (or ``until``), so a claim is seen at the same point of the pass grid as without the
        skip and waits the same time for it."""
        if any(self.latency.waiting.values()):
            return 0.0
        nxt = min(START + timedelta(seconds=arrivals[0][0]) if arrivals else until, until)
        k = max(0, math.ceil((nxt - now).total_seconds() / self.plan.pass_interval_s) - 1)
        self.f.skipped_s += k * self.plan.pass_interval_s
        return k * self.plan.pass_interval_s

    def _arrive(self, arrivals: deque[tuple[float, str, int, bool]], now: datetime) -> dict[str, list[tuple[str, int]]]:
        """The claims visible by ``now``, by partition; each unit starts waiting at its claim's time."""
        grow: dict[str, list[tuple[str, int]]] = defaultdict(list)
        while arrivals and START + timedelta(seconds=arrivals[0][0]) <= now:
            t, ref, units, steady = arrivals.popleft()
            c = self.contracts[ref]
            grow[c.partition].append((ref, units))
            self.latency.need(c.workload, START + timedelta(seconds=t), units, replacement=False, steady=steady)
            self.claimed[c.workload] += units
        return grow

    def _steady(self, at: datetime, arrivals: deque[tuple[float, str, int, bool]], spent: int) -> datetime:
        """The build is over at ``at``: the steady claims from then on; the hall reclaim's time."""
        base = (at - START).total_seconds()
        self.f.build_s, self.f.build_placed = base, not arrivals and not self.latency.building()
        self.f.build_waiting = sum(n.units for q in self.latency.waiting.values() for n in q)
        self.f.build_calls, self.f.built = spent, len(self._ours())
        refs = sorted(self.contracts)
        steady = [(base + dt, ref, units, True) for dt, ref, units in steady_arrivals(self.plan, refs)]
        self.f.steady_claims = len(steady)
        self.arrivals.extend(steady)
        arrivals.extend(steady)   # after whatever build claim is left (the build's end: every one is visible)
        return at + timedelta(seconds=self.plan.steady_s)

    def _ours(self) -> list[Any]:
        """Our live reclaimable instances, not under notice."""
        engine = self.region.engine
        return [inst for i, s in enumerate(engine.specs) if s.pool.purchase_model is PurchaseModel.RECLAIMABLE
                for inst in engine.live[i].values() if inst.owned and not inst.doomed]

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
        self.f.instances = len(self._ours())
        self.f.reclaim_s = (now - START).total_seconds()
        self.floor_workloads = {self._workload(inst) for i, s in
                                enumerate(engine.specs) if s.pool.hall == hall for inst in engine.live[i].values()
                                if inst.owned and inst.metadata.get("sco_purpose") == "floor"}
        units = self.plan.claim_units   # the build claim's floor, as before the steady growth
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

    def _trace_late(self, late_s: float = 10.0, most: int = 5) -> list[str]:
        """The latest steady claims over ``late_s``: the passes of their partition while they waited (virtual
        time after the claim, launched, throttled, calls admitted in the pass, wall) and the controller's events
        for the workload meanwhile."""
        out = []
        for latency, w, at, units in sorted(self.latency.steady_served, key=lambda x: x[0], reverse=True)[:most]:
            if latency <= late_s:
                break
            p, until = self.by_workload[w].partition, at + timedelta(seconds=latency)
            passes, before = [], None
            for t, rs in self.history:
                r = rs[p]
                if at <= t <= until:
                    passes.append(f"+{(t - at).total_seconds():.1f}s launched {r.launched} throttled "
                                  f"{r.throttled} calls {r.spent - (before or r).spent} wall {r.wall_s:.1f}s")
                before = r
            rows = self.conn.execute(
                "SELECT e->>'kind', e->>'pool', count(*) FROM (SELECT convert_from(payload, 'UTF8')::jsonb AS e "
                "FROM outbox) x WHERE e->>'workload' = %s AND (e->>'time')::timestamptz BETWEEN %s AND %s "
                "GROUP BY 1, 2 ORDER BY 1, 2", (w, at, until)).fetchall()
            events = ", ".join(f"{k}@{pool or '-'}×{n}" for k, pool, n in rows)
            out.append(f"{w} ({p}), {units} units claimed at +{(at - START).total_seconds():.0f}s, placed after "
                       f"{latency:.1f}s; its partition's passes: {'; '.join(passes)}; events: {events or 'none'}")
        return out

    def _report(self, now: datetime, end: datetime, results: list[PassResult]) -> None:
        assert self.progress is not None
        waiting = sum(n.units for q in self.latency.waiting.values() for n in q)
        phase = "reclaim" if self.f.reclaim_s else "steady" if self.f.build_s else "build"
        self.progress(f"[{self.plan.instances} inst, {phase}] virtual {(now - START).total_seconds():.0f}/"
                      f"{(end - START).total_seconds():.0f} s, round {self.f.rounds}, slowest pass "
                      f"{max(r.wall_s for r in results):.2f} s wall, units placed {len(self.f.placement_s)}, "
                      f"replaced {len(self.f.replacement_s)}, waiting {waiting}, launched this round "
                      f"{sum(r.launched for r in results)}, calls admitted {sum(r.spent for r in results)}")
