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

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from contracts.cost_attributes import ATTR_WASTED_S, FINAL_MODES, lost_work_s
from contracts.events import Event
from contracts.pools import Pool
from contracts.provider import Clock, Instance, Provider
from contracts.schema import Contract
from contracts.subjects import EventKind

from ..controller.breaker import SafetyConfig
from ..controller.claims import WorkItem
from ..controller.exclusion_stream import ExclusionStream
from ..controller.loop import Controller, ControllerSettings
from ..controller.pgbatch import pipelined
from ..controller.revocation import RecordingRevoker
from ..planning import Caps, PlannerConfig, Strategy, units_per_instance
from ..simregion.clock import VirtualClock
from ..simregion.config import RegionConfig
from ..simregion.economics import price_factor
from ..simregion.engine import SimEvent
from ..simregion.region import SimulatedRegion
from . import disk_cache
from .engine import StepLoss, WorkloadOutcome, guaranteed_rate_per_unit

__all__ = ["APPROXIMATIONS", "PoolFeed", "Ranker", "ReplayScheduler", "partition_controller", "replay_region",
           "replay_through_controller"]

APPROXIMATIONS = (
    "the controller's passes every 60 s of virtual time (live: 5 s); no agent runs: a noticed instance counts as "
    "drained at its notice, its lost work by the agent's rule from its launch (a final checkpoint when the "
    "contract writes one); no boot time (an instance delivers from the pass that launched it); the scheduler "
    "double reports every node idle, so a surplus node goes after three passes; credentials revocation is "
    "recorded, not called; the ranking is re-published every 5 min from the region's events since the warm-up "
    "began (ClickHouse not used); no token budget on provider calls; no operator: the termination breaker paces "
    "a surplus at ADR-12's 2 % per 10 min and opens only on a mass termination, which would stay open")

RANK_EVERY = timedelta(minutes=5)


@dataclass(frozen=True)
class PoolFeed:
    """One reclaimable pool's scorer inputs as the region showed them (what ClickHouse would hold)."""

    pool: str
    rate_eur_h: float
    guaranteed_rate_eur_h: float
    free: int                 # free instances now (rate card)
    capacity: int             # the pool's capacity now (rate card)
    forward_free: int         # expected free instances ahead (``Provider.forward_capacity``)
    reclaims: int             # reclaimed instances so far, drills excluded
    instance_hours: float     # instance-hours held in the pool so far (every tenant)
    card_at: datetime | None = None   # when the rate card counted ``free``
    # what the reclaim forecast's features read (orchestration.forecast.features) beside the counts
    aggregate: str = ""
    hall: str = ""
    vcpu: int = 0
    instances: int = 0        # instances in the pool now, every tenant's
    # the pool's reclaims (time, with notice) since the previous feed the ranker was given, drills excluded
    new_reclaims: tuple[tuple[datetime, bool], ...] = ()


# Called every five minutes with each pool's feed. A ranker with a ``warm`` method is first handed the warm-up's
# feeds, one list per rate card (``warm(list of (time, feeds))``), so it starts with the history a deployed
# ranking would have.
Ranker = Callable[[datetime, Sequence[PoolFeed]], None]


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


@dataclass
class _Feeds:
    reclaims: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    rows: dict[str, tuple[int, int]] = field(default_factory=dict)   # pool -> (free, capacity)
    seen: set[str] = field(default_factory=set)
    new: dict[str, list[tuple[datetime, bool]]] = field(default_factory=lambda: defaultdict(list))
    warm: list[tuple[datetime, list[PoolFeed]]] | None = None   # the warm-up's feeds, kept for a warming ranker


class _Run:
    """The region, its hooks and the tallies of one replay."""

    def __init__(self, region: SimulatedRegion, contracts: Mapping[str, Contract], units: Mapping[str, int]) -> None:
        self.region, self.engine = region, region.engine
        self.by_workload = {c.workload: c for c in contracts.values()}
        self.units = units
        self.pools: dict[str, Pool] = {s.pool.pool_id: s.pool for s in self.engine.specs}
        catalogue = tuple(self.pools.values())
        self.outcome = {w: WorkloadOutcome(w, str(c.tier), units.get(w, 0),
                                           guaranteed_rate_per_unit=guaranteed_rate_per_unit(c, catalogue))
                        for w, c in self.by_workload.items()}
        self.feeds = _Feeds()
        self.events: list[SimEvent] = []
        # reclaimable units lost per pool in each (workload, 5-min bucket), and, to trace the worst step, the
        # reclaimable units per pool each workload held at the pass before the bucket's first loss (each pass's
        # holding is a new mapping nobody changes afterwards, so it is kept, not copied)
        self.lost_by_pool: dict[tuple[str, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.held_before: dict[tuple[str, int], dict[str, int]] = {}
        self.held_now: dict[str, dict[str, int]] = {}
        self.fallback_live: dict[str, bool] = {}
        self.units_of: dict[tuple[str, str], int] = {}   # (workload, pool) -> units an instance holds
        self.engine.on_event.append(self._on_event)
        self.engine.on_rate_card.append(self._on_rate_card)
        self.offer: tuple[object, ...] = ()   # the rate card and reservations the last pass was offered
        self.woken = True   # an input of the controllers changed since their last pass (``Controller.due``)

    def detach(self) -> None:
        """Take this run's hooks off the region (it ran the warm-up alone; the replay's run takes over)."""
        self.engine.on_event.remove(self._on_event)
        self.engine.on_rate_card.remove(self._on_rate_card)

    def _on_rate_card(self, t: float, rows: list[tuple[int, float, int, int]]) -> None:
        for i, _, free, cap in rows:
            pid = self.engine.specs[i].pool.pool_id
            self.feeds.rows[pid] = (free, cap)
            self.feeds.seconds[pid] += (cap - free) * self.region.config.rate_card_s
        if self.feeds.warm is not None:
            self.feeds.warm.append((self.engine.at(t), self._warm_feeds(t, rows)))

    def _warm_feeds(self, t: float, rows: list[tuple[int, float, int, int]]) -> list[PoolFeed]:
        """The feeds a ranker would have been given at this warm-up card (forward capacity 30 min ahead)."""
        e, when, out = self.engine, self.engine.at(t), []
        for i, u, free, cap in rows:
            p = e.specs[i].pool
            g = float(p.guaranteed_rate_eur_h)
            n = len(e.live[i])
            out.append(PoolFeed(p.pool_id, round(g * price_factor(u, self.region.config.price_demand), 4), g, free,
                                cap, max(e.capacity(i, t + 1800.0) - n, 0), self.feeds.reclaims.get(p.pool_id, 0),
                                round(self.feeds.seconds.get(p.pool_id, 0.0) / 3600, 3), when, p.aggregate, p.hall,
                                p.vcpu, n, tuple(self.feeds.new.pop(p.pool_id, ()))))
        return out

    def _on_event(self, ev: SimEvent) -> None:
        self.events.append(ev)
        if ev.drill or ev.kind not in (EventKind.NOTICE, EventKind.NO_NOTICE_LOSS):
            return
        if ev.instance not in self.feeds.seen:
            self.feeds.seen.add(ev.instance)
            self.feeds.reclaims[ev.pool] += 1
            self.feeds.new[ev.pool].append((self.engine.at(ev.time), ev.kind is EventKind.NOTICE))
        c = self.by_workload.get(ev.workload or "")
        inst = self.engine.by_id.get(ev.instance)
        if c is None or inst is None or not inst.owned:
            return
        if inst.metadata.get("sco_purpose", "reclaimable") != "reclaimable":
            return
        o = self.outcome[c.workload]
        o.interruptions += 1
        k = units_per_instance(self.pools[ev.pool], c)
        bucket = (c.workload, int(ev.time // 300))
        self.lost_by_pool[bucket][ev.pool] += k
        self.held_before.setdefault(bucket, self.held_now.get(c.workload, {}))
        if ev.kind is EventKind.NO_NOTICE_LOSS:
            o.no_notice_losses += 1   # its wasted_s comes from the controller's own ``lost`` event
            return
        # the agent's drain, approximated: the work lost since the last checkpoint, per unit, on k units
        wasted = lost_work_s(ev.time - inst.launched, checkpoint_mode=str(c.checkpoint_mode),
                             framework=None if c.framework is None else str(c.framework),
                             interval_min=c.checkpoint_interval_min, max_unit_length_min=c.max_unit_length_min,
                             final_written=str(c.checkpoint_mode) in FINAL_MODES)
        o.wasted_s += round(wasted) * k

    def feed_list(self, horizon: timedelta) -> list[PoolFeed]:
        ahead = {f.pool_id: f.expected_free_instances for f in self.region.forward_capacity(horizon)}
        rate_card = self.region.rate_card()
        card = {e.pool_id: e for e in rate_card.entries}
        out = []
        for pid, (free, cap) in sorted(self.feeds.rows.items()):
            e, p = card[pid], self.pools[pid]
            out.append(PoolFeed(pid, float(e.rate_eur_h), float(e.guaranteed_rate_eur_h), free, cap,
                                ahead.get(pid, free), self.feeds.reclaims.get(pid, 0),
                                round(self.feeds.seconds.get(pid, 0.0) / 3600, 3), rate_card.time, p.aggregate,
                                p.hall, p.vcpu, len(self.engine.live[self.engine.index[pid]]),
                                tuple(self.feeds.new.pop(pid, ()))))
        return out

    def accrue(self, listed: Sequence[Instance], plans: Mapping[str, Any], step_s: int) -> None:
        """One pass's worth of held capacity, delivered units, fallback and money, per workload."""
        rates = {e.pool_id: e.rate_eur_h for e in self.region.rate_card().entries}
        step_h = Decimal(step_s) / 3600
        held: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))   # workload -> purpose -> units
        by_pool: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))   # reclaimable, per pool
        planning: dict[str, Decimal] = defaultdict(Decimal)   # this step's reclaimable spend at planning rates
        for i in listed:
            owner = i.owner
            c = self.by_workload.get(owner.workload) if owner else None
            if c is None or i.status != "active" or i.pool_id is None:
                continue
            o, pool = self.outcome[c.workload], self.pools[i.pool_id]
            purpose = i.metadata.get("sco_purpose", "reclaimable")
            key = (c.workload, i.pool_id)
            if key not in self.units_of:
                self.units_of[key] = units_per_instance(pool, c)
            held[c.workload][purpose] += self.units_of[key]
            rate = rates.get(i.pool_id, pool.rate_eur_h)
            if purpose == "reclaimable":
                by_pool[c.workload][i.pool_id] += self.units_of[key]
                o.instance_s += step_s
                o.reclaimable_cost += rate * step_h
                o.reclaimable_cost_planning += pool.rate_eur_h * step_h
                planning[c.workload] += pool.rate_eur_h * step_h
            elif purpose == "floor":
                o.floor_cost += rate * step_h
            else:
                o.fallback_cost += rate * step_h
        self.held_now = by_pool
        for w, o in self.outcome.items():
            want = self.units.get(w, 0)
            h = held.get(w, {})
            rec = min(h.get("reclaimable", 0), want)
            if rec < h.get("reclaimable", 0):   # held beyond the claim: make-before-break overlap, surplus to go
                o.surplus_cost_planning += planning[w] * (h["reclaimable"] - rec) / h["reclaimable"]
            base = min(want, rec + h.get("floor", 0))
            fb = min(want - base, h.get("fallback", 0))
            o.wanted_s += want * step_s
            o.reclaimable_s += rec * step_s
            o.fallback_s += fb * step_s
            o.delivered_s += (base + fb) * step_s
            o.shortfall_s += (want - base - fb) * step_s
            if fb and not self.fallback_live.get(w):
                o.fallback_starts += 1
            self.fallback_live[w] = bool(fb)
            wp = plans.get(w)
            if wp is not None:
                o.depth_premium += wp.depth_premium_eur_h * step_h

    def finish(self, conn: Any) -> None:
        for (w, b), pools_lost in sorted(self.lost_by_pool.items()):
            o, lost = self.outcome[w], sum(pools_lost.values())
            if o.worst_step is None or min(lost, o.units) > o.worst_step_loss_units:
                o.worst_step = StepLoss(self.engine.at(b * 300.0), dict(pools_lost),
                                        dict(self.held_before.get((w, b), {})))
            o.worst_step_loss_units = max(o.worst_step_loss_units, min(lost, o.units))
        # the controller's own ``lost`` events of no-notice losses: ``wasted_s`` is one unit's lost work on the
        # instance (lost_work_s); the outcome counts unit-seconds, so times the units the instance held
        for w, pool, wasted in conn.execute(
                "SELECT e->>'workload', e->>'pool', (e->'attributes'->>%s)::numeric FROM "
                "(SELECT convert_from(payload, 'UTF8')::jsonb AS e FROM outbox) x WHERE e->>'kind' = 'lost'",
                (ATTR_WASTED_S,)).fetchall():
            c = self.by_workload.get(w or "")
            if c is not None and pool in self.pools and wasted is not None:
                self.outcome[c.workload].wasted_s += int(wasted) * units_per_instance(self.pools[pool], c)


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
                              caps: Caps | None = None, cache: Path | None = None) -> dict[str, WorkloadOutcome]:
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
    (``disk_cache``; callers pass ``disk_cache.cache_dir()``), None to run the warm-up here."""
    keep = getattr(ranker, "warm", None) is not None
    region, clock, feeds = disk_cache.cached(
        "warmup", (config.model_dump_json(), start.isoformat(), warmup_days, fast, keep),
        lambda: warmed_region(config, start, warmup_days, fast=fast, keep_feeds=keep), cache)
    return replay_region(region, clock, start, days, contracts, units, conn, strategy=strategy, ranker=ranker,
                         pass_interval=pass_interval, progress=progress, diagnostics=diagnostics, fast=fast,
                         caps=caps, warmed=feeds)


def warmed_region(config: RegionConfig, start: datetime, warmup_days: float, *, fast: bool = True,
                  keep_feeds: bool = True) -> tuple[SimulatedRegion, VirtualClock, _Feeds]:
    """The region run alone from ``start - warmup_days`` to ``start`` (room first), its clock, and the scorer's
    feeds it showed (``keep_feeds``: every rate card's, for a ranker that warms up on them) — what
    ``replay_region`` would hold after its warm-up, as a value the disk cache can keep (no hook of a run left on
    the region)."""
    begin = start - timedelta(days=warmup_days)
    clock = VirtualClock(begin)
    region = SimulatedRegion(config.model_copy(update={"room_first": True}), clock, start=begin)
    region.cache_listing = fast
    run = _Run(region, {}, {})   # nothing of ours runs in the warm-up: only the feeds' hooks do anything
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
                  warmed: _Feeds | None = None) -> dict[str, WorkloadOutcome]:
    """The replay loop over ``region`` (the simulated region, or a recorded history: ``trace_region``) on
    ``clock`` from ``start`` for ``days``; the options as ``replay_through_controller`` takes them. ``warmed``: the
    feeds of a region that ran its warm-up already (``warmed_region``); None runs it here."""
    region.cache_listing = fast
    run = _Run(region, contracts, units)
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
    outbox = _Outbox(conn, stream)
    step_s = int(pass_interval.total_seconds())
    end, now, ranked_at = start + timedelta(days=days), start, None
    # fast: one pipeline for the whole replay — a pass's statements wait only where a result is read (each
    # controller commits what it records in its own round trips, ``pgbatch``), not at the end of every pass
    with pipelined(conn) if fast else nullcontext():
        while now < end:
            ranked_at = _pass(run, ctls, outbox, ranker, ranked_at, now, step_s, every=not fast)
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


def _pass(run: _Run, ctls: Sequence[tuple[Controller, ReplayScheduler]], outbox: _Outbox, ranker: Ranker | None,
          ranked_at: datetime | None, now: datetime, step_s: int, every: bool = False) -> datetime | None:
    """One replay pass at ``now``: the ranking when due, each partition's controller, the relay and the tallies
    (no operator: the breaker paces a surplus and opens only on a mass termination). Returns when the ranking was
    last published.

    A controller whose last pass was quiet takes this one only when an input changed (``_woken``) or a timed rule
    is due (``Controller.due``); ``every``: each controller takes every pass."""
    region = run.region
    if ranker is not None and (ranked_at is None or now - ranked_at >= RANK_EVERY):
        ranker(now, run.feed_list(timedelta(minutes=30)))
        ranked_at = now
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
    return ranked_at


def _woken(run: _Run) -> bool:
    """Whether the controllers' inputs changed since their last pass: an event of one of our instances, a ranking
    published (``run.woken``), a new rate card or another reservation (other tenants' committed instances). Each
    is read from the region as the controllers' observer reads it; cleared for the next pass."""
    offer = (run.region.rate_card(), *run.region.reservations())
    changed = run.woken or len(offer) != len(run.offer) or any(a is not b for a, b in zip(offer, run.offer,
                                                                                          strict=True))
    run.offer, run.woken = offer, False
    return changed


def _feed_events(run: _Run, ctls: Sequence[tuple[Controller, ReplayScheduler]], stream: ExclusionStream,
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


class _Outbox:
    """The outbox as the relay would publish it: each new controller event to the exclusion watcher, counted."""

    def __init__(self, conn: Any, stream: ExclusionStream) -> None:
        self.conn, self.stream, self.last, self.held, self.passes = conn, stream, 0, 0, 0
        self.kinds: dict[str, int] = defaultdict(int)

    def feed(self, now: datetime) -> None:
        rows = self.conn.execute("SELECT id, payload FROM outbox WHERE id > %s ORDER BY id", (self.last,)).fetchall()
        for n, payload in rows:
            self.last = max(self.last, int(n))
            event = Event.from_json(bytes(payload))
            self.kinds[str(event.kind)] += 1
            if event.attributes.get("exclusion_cause") == "full":   # of the exclusions, those of a full pool
                self.kinds["excluded-full"] += 1
            if event.source != "exclusion-watcher":
                self.stream.feed(event, now)
