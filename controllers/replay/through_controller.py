"""The replay through the production controller ("one code path").

The simulated region (``SimulatedRegion``, the provider protocol) runs on a ``VirtualClock``: its reclaim waves,
notices, no-notice losses, hall reclaims and rate cards are the region's own, as in ``from_region`` (guaranteed
requests take free room first). One production ``Controller`` per partition — observe → decide → apply, the
planner, floor keeper, fallback arbiter with its PostgreSQL ledger, the safety gate and breaker — takes a pass
every ``pass_interval`` of virtual time (60 s; the live controller's default is 5 s, which would be 12 times the
passes for the same days) against a real PostgreSQL the caller migrated. Every region event goes through the
production exclusion watcher (``ExclusionStream.feed``, as the JetStream consumer feeds it) and the controller's
breach-rate signal; every five minutes a ``ranker`` the caller injects publishes the ranking in force from the
pools' inputs (the sco layer wires the production scorer, ``orchestration.scoring``).

Approximations, printed with the figures (``APPROXIMATIONS``): no agent runs, so a noticed instance is taken
as drained at its notice — its lost work is the agent's rule (``contracts.cost_attributes.lost_work_s``, a
final checkpoint when the contract writes one on notice) from its launch; no-notice losses carry the
controller's own ``lost`` events' ``wasted_s``. No boot time: a launched instance delivers from the pass that
launched it. The scheduler double holds each workload's claim as whole pending units and reports every node
idle (work is fungible units: the idle rule delays a termination by three passes, nothing more).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from contracts.provider import Clock, Provider
from contracts.schema import Contract
from contracts.subjects import EventKind

from ..controller.breaker import SafetyConfig
from ..controller.claims import WorkItem
from ..controller.exclusion_stream import ExclusionStream
from ..controller.loop import Controller, ControllerSettings
from ..controller.pgbatch import pipelined
from ..controller.revocation import RecordingRevoker
from ..planning import Caps, PlannerConfig, Strategy
from ..simregion.clock import VirtualClock
from ..simregion.config import RegionConfig
from ..simregion.region import SimulatedRegion
from . import disk_cache
from .engine import WorkloadOutcome
from .replay_run import Feeds, OutboxRelay, PoolFeed, Ranker, ReplayRun

__all__ = [
    "APPROXIMATIONS",
    "PoolFeed",
    "Ranker",
    "RankingClock",
    "ReplayScheduler",
    "partition_controller",
    "replay_region",
    "replay_through_controller",
]

APPROXIMATIONS = (
    "the controller's passes every 60 s of virtual time (live: 5 s); no agent runs: a noticed instance counts as "
    "drained at its notice, its lost work by the agent's rule from its launch (a final checkpoint when the "
    "contract writes one); no boot time (an instance delivers from the pass that launched it); the scheduler "
    "double reports every node idle, so a surplus node goes after three passes; credentials revocation is "
    "recorded, not called; the ranking is re-published every 5 min from the region's events since the warm-up "
    "began (ClickHouse not used), in force at once unless a latency is given; no token budget on provider calls; "
    "no operator: the termination breaker paces a surplus at ADR-12's 2 % per 10 min and opens only on a mass "
    "termination, which would stay open")

RANK_EVERY = timedelta(minutes=5)
# A ranking computed from the region at t is in force from the first pass at or after t + ``rank_latency``. None
# by default (the figures and decisions hashes of docs/benchmarks.md are at none); in production the ranking
# asset's run (launched, reading the history, scoring, forecasting, publishing) stands between its inputs and its
# rows, and a latency lets a ranker compute elsewhere meanwhile (``sco.commands.replay_ranking.RankingWorker``).


class RankingClock:
    """When the next ranking is due, and the rankings computed but not yet in force (oldest first): each in force
    ``latency`` after the region it was computed from, but the first at once (the asset ran through the warm-up, so
    a ranking is in force when the controllers start)."""

    def __init__(self, latency: timedelta = timedelta(0)) -> None:
        self.latency = latency
        self.ranked_at: datetime | None = None
        self.pending: deque[tuple[datetime, Callable[[], None]]] = deque()

    def land(self, now: datetime) -> bool:
        """Publish every ranking whose latency has passed by ``now``; whether one was."""
        landed = False
        while self.pending and self.pending[0][0] <= now:
            self.pending.popleft()[1]()
            landed = True
        return landed

    def due(self, now: datetime) -> bool:
        """Whether a ranking is computed from the region at ``now``."""
        return self.ranked_at is None or now - self.ranked_at >= RANK_EVERY

    def begin(self, now: datetime, publish: Callable[[], None]) -> None:
        """A ranking computed from the region at ``now``; ``publish`` puts it in force."""
        first = self.ranked_at is None
        self.ranked_at = now
        self.pending.append((now if first else now + self.latency, publish))


class ReplayScheduler:
    """The ``ClaimSource`` double: each workload's claim as whole pending units; every node idle."""

    def __init__(self, contracts: Mapping[str, Contract], units: Mapping[str, int]) -> None:
        self.items = [WorkItem("slurm", f"{c.workload}-{n}", ref, float(c.resources.vcpu),
                               float(c.resources.memory_gib), "pending")
                      for ref, c in sorted(contracts.items()) for n in range(units.get(c.workload, 0))]
        self.names: set[str] = set()

    def add(self, contract: Contract, units: int) -> None:
        """``units`` more pending units of ``contract``'s workload: its claim grows (the fleet simulation)."""
        first = sum(1 for i in self.items if i.contract_ref == contract.ref)
        self.items += [WorkItem("slurm", f"{contract.workload}-{first + n}", contract.ref,
                                float(contract.resources.vcpu), float(contract.resources.memory_gib), "pending")
                       for n in range(units)]

    def work(self) -> list[WorkItem]:
        """The replay's work items (the claims the controller sees)."""
        return list(self.items)

    def idle_nodes(self) -> set[str]:
        """The names of the replay's idle nodes."""
        return set(self.names)


def partition_controller(provider: Provider, conn: Any, partition: str, contracts: Mapping[str, Contract],
                         units: Mapping[str, int], clock: Clock, *, strategy: Strategy | None = None,
                         holder: str | None = None, caps: Caps | None = None) -> tuple[Controller, ReplayScheduler]:
    """One partition's production ``Controller`` as the replay runs it (its contracts, the ``ReplayScheduler``
    double, a 10-min lease, revocation recorded) against ``provider``: the region in process, or over HTTP with
    the region's token budget in front (the fleet-scale simulation, one process per partition). ``caps``: the
    planner's (ADR-06's by default; lifted only for a diagnostic replay)."""
    mine = {ref: c for ref, c in contracts.items() if c.partition == partition}
    source = ReplayScheduler(mine, units)
    settings = ControllerSettings(provider.region, partition, holder=holder or f"replay:{partition}",
                                  lease_ttl=timedelta(minutes=10), safety=SafetyConfig(),
                                  planner=PlannerConfig(caps=caps or Caps(), strategy=strategy))
    return Controller(settings, provider, conn, source, mine, clock, revoker=RecordingRevoker()), source


def _controllers(region: SimulatedRegion, conn: Any, contracts: Mapping[str, Contract], units: Mapping[str, int],
                 strategy: Strategy | None, clock: VirtualClock, caps: Caps | None = None
                 ) -> list[tuple[Controller, ReplayScheduler]]:
    return [partition_controller(region, conn, partition, contracts, units, clock, strategy=strategy, caps=caps)
            for partition in sorted({c.partition for c in contracts.values()})]


def replay_through_controller(config: RegionConfig, start: datetime, days: float, contracts: Mapping[str, Contract],
                              units: Mapping[str, int], conn: Any, *, strategy: Strategy | None = None,
                              warmup_days: float = 7.0, ranker: Ranker | None = None,
                              pass_interval: timedelta = timedelta(seconds=60),
                              progress: Callable[[float], None] | None = None,
                              diagnostics: dict[str, int] | None = None, fast: bool = True,
                              caps: Caps | None = None, cache: Path | None = None,
                              rank_latency: timedelta = timedelta(0)) -> dict[str, WorkloadOutcome]:
    """Replay ``days`` of the region (after ``warmup_days`` it runs alone) through one production controller per
    partition on ``conn`` (a migrated, empty PostgreSQL database; autocommit). ``contracts`` by ref.
    ``diagnostics``, when given, receives the count of the controllers' events by kind (``launch-failed``,
    ``excluded``, ``breaker-tripped``, ...) and of the passes that held actions back.

    ``fast`` (the default) runs each pass's statements in psycopg's pipeline mode — the controller's code and
    statements are the same, sent without waiting for the results nobody reads, one round trip per read — lets
    the region hand out each listed ``Instance`` once per state, and skips a controller's pass after a quiet one
    while none of its inputs changed and no timed rule is due (``Controller.due``); False runs the path before
    (every statement a round trip, every listing rebuilt, every pass taken): the equivalence test compares the
    two. ``caps``: the planner's caps (ADR-06's unless a diagnostic lifts them). Nobody resets an open termination
    breaker: it opens only on a mass termination (``breaker.Safety``), and a replay that trips it says so in
    ``diagnostics``.
    ``cache``: a directory where the region after its warm-up is kept, keyed by its inputs and code
    (``disk_cache``; callers pass ``disk_cache.cache_dir()``), None to run the warm-up here. ``rank_latency``: how
    long after its inputs a ranking is in force (``RankingClock``)."""
    keep = getattr(ranker, "warm", None) is not None
    region, clock, feeds = disk_cache.cached(
        "warmup", (config.model_dump_json(), start.isoformat(), warmup_days, fast, keep),
        lambda: warmed_region(config, start, warmup_days, fast=fast, keep_feeds=keep), cache)
    return replay_region(region, clock, start, days, contracts, units, conn, strategy=strategy, ranker=ranker,
                         pass_interval=pass_interval, progress=progress, diagnostics=diagnostics, fast=fast,
                         caps=caps, warmed=feeds, rank_latency=rank_latency)


def warmed_region(config: RegionConfig, start: datetime, warmup_days: float, *, fast: bool = True,
                  keep_feeds: bool = True) -> tuple[SimulatedRegion, VirtualClock, Feeds]:
    """The region run alone from ``start - warmup_days`` to ``start`` (room first), its clock, and the scorer's
    feeds it showed (``keep_feeds``: every rate card's, for a ranker that warms up on them) — what
    ``replay_region`` would hold after its warm-up, as a value the disk cache can keep (no hook of a run left on
    the region)."""
    begin = start - timedelta(days=warmup_days)
    clock = VirtualClock(begin)
    region = SimulatedRegion(config.model_copy(update={"room_first": True}), clock, start=begin)
    region.cache_listing = fast
    run = ReplayRun(region, {}, {})   # nothing of ours runs in the warm-up: only the feeds' hooks do anything
    if keep_feeds:
        run.feeds.warm = []
    clock.advance_to(start)
    region.sync()
    run.detach()
    return region, clock, run.feeds


def replay_region(region: SimulatedRegion, clock: VirtualClock, start: datetime, days: float,
                  contracts: Mapping[str, Contract], units: Mapping[str, int], conn: Any, *, strategy: Strategy | None,
                  ranker: Ranker | None, pass_interval: timedelta, progress: Callable[[float], None] | None,
                  diagnostics: dict[str, int] | None, fast: bool, caps: Caps | None,
                  warmed: Feeds | None = None, rank_latency: timedelta = timedelta(0)
                  ) -> dict[str, WorkloadOutcome]:
    """The replay loop over ``region`` (the simulated region, or a recorded history: ``trace_region``) on
    ``clock`` from ``start`` for ``days``; the options as ``replay_through_controller`` takes them. ``warmed``: the
    feeds of a region that ran its warm-up already (``warmed_region``); None runs it here."""
    region.cache_listing = fast
    run = ReplayRun(region, contracts, units)
    warm = getattr(ranker, "warm", None)
    if warmed is not None:
        run.feeds = warmed
    elif warm is not None:
        run.feeds.warm = []
    clock.advance_to(start)
    region.sync()                                 # the warm-up: history for the scorer, nothing of ours
    run.events.clear()
    if warm is not None and run.feeds.warm is not None:
        warm(run.feeds.warm)
        run.feeds.warm = None
    ctls = _controllers(region, conn, contracts, units, strategy, clock, caps)
    stream = ExclusionStream(ctls[0][0].store)
    outbox = OutboxRelay(conn, stream)
    step_s = int(pass_interval.total_seconds())
    end, now, ranking = start + timedelta(days=days), start, RankingClock(rank_latency)
    # fast: one pipeline for the whole replay — a pass's statements wait only where a result is read (each
    # controller commits what it records in its own round trips, ``pgbatch``), not at the end of every pass
    with pipelined(conn) if fast else nullcontext():
        while now < end:
            _pass(run, ctls, outbox, ranker, ranking, now, step_s, every=not fast)
            now += pass_interval
            clock.advance_to(now)
            region.sync()
            _feed_events(run, ctls, stream, now)
            if progress is not None and now.minute == 0 and now.hour % 6 == 0:
                progress((now - start).total_seconds() / (end - start).total_seconds())
        for ctl, source in ctls:   # a last pass at the end sees the losses of the last interval (not accrued)
            source.names = {i.name for i in region.list_instances()}
            ctl.step()
        outbox.feed(now)
    run.finish(conn)
    if progress is not None:
        progress(1.0)
    if diagnostics is not None:
        diagnostics.update(outbox.kinds)
        diagnostics["passes-holding-actions"] = outbox.held
        diagnostics["controller-passes"] = outbox.passes
    return run.outcome


def _pass(run: ReplayRun, ctls: Sequence[tuple[Controller, ReplayScheduler]], outbox: OutboxRelay,
          ranker: Ranker | None, ranking: RankingClock, now: datetime, step_s: int, every: bool = False) -> None:
    """One replay pass at ``now``: a ranking begun when due, the rankings whose latency passed put in force, each
    partition's controller, the relay and the tallies (no operator: the breaker paces a surplus and opens only on
    a mass termination).

    A controller whose last pass was quiet takes this one only when an input changed (``_woken``) or a timed rule
    is due (``Controller.due``); ``every``: each controller takes every pass."""
    region = run.region
    if ranker is not None and ranking.due(now):
        ranking.begin(now, ranker(now, run.feed_list(timedelta(minutes=30))))
    if ranking.land(now):
        run.woken = True
    woken = _woken(run) or every
    names = {i.name for i in region.list_instances()}
    plans: dict[str, Any] = {}
    stepped = False
    for ctl, source in ctls:
        if ctl.due(now, woken):
            source.names = names
            report = ctl.step()
            outbox.held += 1 if report.held else 0
            outbox.passes += 1
            stepped = True
        plans.update(ctl.previous.plans if ctl.previous else {})
    if stepped:   # the controllers' events (launch-failed: thrash) reach the watcher as in production
        outbox.feed(now)
    run.accrue(region.list_instances(), plans, step_s)


def _woken(run: ReplayRun) -> bool:
    """Whether the controllers' inputs changed since their last pass: an event of one of our instances, a ranking
    published (``run.woken``), a new rate card or another reservation (other tenants' committed instances). Each
    is read from the region as the controllers' observer reads it; cleared for the next pass."""
    offer = (run.region.rate_card(), *run.region.reservations())
    changed = run.woken or len(offer) != len(run.offer) or any(a is not b for a, b in zip(offer, run.offer,
                                                                                          strict=True))
    run.offer, run.woken = offer, False
    return changed


def _feed_events(run: ReplayRun, ctls: Sequence[tuple[Controller, ReplayScheduler]], stream: ExclusionStream,
                 now: datetime) -> None:
    """The region's events since the last pass to the exclusion watcher and the controllers' breach signal."""
    region = run.region
    for ev in run.events:
        if not ev.workload:
            continue   # another tenant's instance: on a real provider our lifecycle stream never sees it
        run.woken = True
        event = region.to_event(ev)
        stream.feed(event, now)
        if ev.kind is EventKind.NOTICE and ev.workload and not ev.drill:
            for ctl, _ in ctls:
                if ev.workload in {c.workload for c in ctl.contracts.values()}:
                    ctl.record_notice(ev.workload, event.time)
    run.events.clear()
