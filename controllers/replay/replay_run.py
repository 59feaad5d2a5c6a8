"""One replay's run through the controller, apart from its loop (``through_controller``): the scorer's feeds the
region shows (``PoolFeed``, kept for the ranker and, through the warm-up, for its forecast), the tallies each
replayed minute adds per workload (held capacity, delivered and short units, money at card and planning rates,
the worst five minutes) from the region's hooks and the listing, and the outbox read as the relay would publish
it to the exclusion watcher (``OutboxRelay``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from contracts.cost_attributes import ATTR_WASTED_S, FINAL_MODES, lost_work_s
from contracts.events import Event
from contracts.pools import Pool
from contracts.provider import Instance
from contracts.schema import Contract
from contracts.subjects import EventKind

from ..controller.exclusion_stream import ExclusionStream
from ..planning import Purpose as PlanPurpose
from ..planning import units_per_instance
from ..simregion.economics import price_factor
from ..simregion.engine import SimEvent
from ..simregion.region import SimulatedRegion
from .engine import StepLoss, WorkloadOutcome, guaranteed_rate_per_unit

__all__ = ["Feeds", "OutboxRelay", "PoolFeed", "Ranker", "ReplayRun"]


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


# Called every five minutes with each pool's feed; returns what publishes the ranking it computed from them, which
# the replay calls when it puts that ranking in force (``through_controller.RankingClock``): a ranker may
# compute it elsewhere meanwhile. A ranker with a ``warm`` method is first handed the warm-up's feeds, one list per
# rate card (``warm(list of (time, feeds))``), so it starts with the history a deployed ranking would have.
Ranker = Callable[[datetime, Sequence[PoolFeed]], Callable[[], None]]


@dataclass
class Feeds:
    reclaims: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    rows: dict[str, tuple[int, int]] = field(default_factory=dict)   # pool -> (free, capacity)
    seen: set[str] = field(default_factory=set)
    new: dict[str, list[tuple[datetime, bool]]] = field(default_factory=lambda: defaultdict(list))
    warm: list[tuple[datetime, list[PoolFeed]]] | None = None   # the warm-up's feeds, kept for a warming ranker


class ReplayRun:
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
        self.feeds = Feeds()
        self.events: list[SimEvent] = []
        # reclaimable units lost per pool in each (workload, 5-min bucket), and, to trace the worst step, the
        # reclaimable units per pool each workload held at the pass before the bucket's first loss (each pass's
        # holding is a new mapping nobody changes afterwards, so it is kept, not copied)
        self.lost_by_pool: dict[tuple[str, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.held_before: dict[tuple[str, int], dict[str, int]] = {}
        self.held_now: dict[str, dict[str, int]] = {}
        self.fallback_live: dict[str, bool] = {}
        self.units_of: dict[tuple[str, str], int] = {}   # (workload, pool) -> units an instance holds
        self._planned: dict[str, tuple[Any, dict[str, int]]] = {}   # workload -> (plan, its instances per pool)
        # an instance's workload and purpose, from the tags and metadata it was launched with (they never change)
        self.whose: dict[str, tuple[str | None, str]] = {}
        # the card read last, its rates by pool, and one instance-step's cost per pool at them and at the planning
        # rate: each product once a card, not once an instance (the same Decimals, added in the same order)
        self._card_costs: tuple[object, int, dict[str, Decimal], dict[str, Decimal]] = (None, 0, {}, {})
        self._plan_costs: dict[tuple[str, int], Decimal] = {}
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
                                p.vcpu, e.instances(i), tuple(self.feeds.new.pop(p.pool_id, ()))))
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
        """Each reclaimable pool's scorer inputs now (the ranker's five-minute call), forward capacity ``horizon``
        ahead; the reclaims since the previous call are handed out once."""
        ahead = self.region.forward_free(horizon)
        rate_card = self.region.rate_card()
        card = {e.pool_id: e for e in rate_card.entries}
        out = []
        for pid, (free, cap) in sorted(self.feeds.rows.items()):
            e, p = card[pid], self.pools[pid]
            out.append(PoolFeed(pid, float(e.rate_eur_h), float(e.guaranteed_rate_eur_h), free, cap,
                                ahead.get(pid, free), self.feeds.reclaims.get(pid, 0),
                                round(self.feeds.seconds.get(pid, 0.0) / 3600, 3), rate_card.time, p.aggregate,
                                p.hall, p.vcpu, self.engine.instances(self.engine.index[pid]),
                                tuple(self.feeds.new.pop(pid, ()))))
        return out

    def accrue(self, listed: Sequence[Instance], plans: Mapping[str, Any], step_s: int) -> None:
        """One pass's worth of held capacity, delivered units, fallback and money, per workload."""
        card = self.region.rate_card()
        if self._card_costs[0] is not card or self._card_costs[1] != step_s:   # a card compared by identity
            self._card_costs = (card, step_s, {e.pool_id: e.rate_eur_h for e in card.entries}, {})
        _, _, rates, costs = self._card_costs
        step_h = Decimal(step_s) / 3600
        held: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))   # workload -> purpose -> units
        by_pool: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))   # reclaimable, per pool
        # reclaimable instances held per workload and pool: what is held beyond the plan's instances there is
        # surplus and make-before-break overlap
        count: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for i in listed:
            workload, purpose = self.whose.get(i.instance_id) or self._who(i)
            c = self.by_workload.get(workload) if workload else None
            if c is None or i.status != "active" or i.pool_id is None:
                continue
            o, pool = self.outcome[c.workload], self.pools[i.pool_id]
            key = (c.workload, i.pool_id)
            if key not in self.units_of:
                self.units_of[key] = units_per_instance(pool, c)
            held[c.workload][purpose] += self.units_of[key]
            cost = costs.get(i.pool_id)
            if cost is None:
                cost = costs[i.pool_id] = rates.get(i.pool_id, pool.rate_eur_h) * step_h
            if purpose == "reclaimable":
                by_pool[c.workload][i.pool_id] += self.units_of[key]
                o.instance_s += step_s
                o.reclaimable_cost += cost
                at_plan = self._plan_costs.get((i.pool_id, step_s))
                if at_plan is None:
                    at_plan = self._plan_costs[(i.pool_id, step_s)] = pool.rate_eur_h * step_h
                o.reclaimable_cost_planning += at_plan
                count[c.workload][i.pool_id] += 1
            elif purpose == "floor":
                o.floor_cost += cost
            else:
                o.fallback_cost += cost
        self.held_now = by_pool
        for w, o in self.outcome.items():
            want = self.units.get(w, 0)
            h = held.get(w, {})
            rec = min(h.get("reclaimable", 0), want)
            if w in count:
                o.surplus_cost_planning += self._beyond_plan(w, count[w], plans.get(w), step_s)
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

    def _beyond_plan(self, workload: str, held: Mapping[str, int], plan: Any, step_s: int) -> Decimal:
        """This step's planning-rate cost of the reclaimable instances held beyond the plan's in each pool: the
        replacements launched before what they replace goes, the surplus the breaker paces out. Units an instance of
        the plan leaves unused are not surplus but the waterfall's fit (counting held *units* above the claim put
        that rounding under surplus for workloads with no floor, and nowhere for those with one)."""
        planned = self._planned.get(workload)
        if planned is None or planned[0] is not plan:   # the plan's instances per pool, once per plan object
            planned = self._planned[workload] = (plan, {} if plan is None else {
                a.pool_id: a.instances for a in plan.allocations if a.purpose is PlanPurpose.RECLAIMABLE})
        wanted = planned[1]
        at_plan = self._plan_costs   # (pool, step) -> an instance-step at the planning rate, filled by ``accrue``
        return sum((at_plan[(pid, step_s)] * (n - wanted.get(pid, 0)) for pid, n in held.items()
                    if n > wanted.get(pid, 0)), Decimal(0))

    def _who(self, i: Instance) -> tuple[str | None, str]:
        owner = i.owner
        self.whose[i.instance_id] = who = (owner.workload if owner else None,
                                           i.metadata.get("sco_purpose", "reclaimable"))
        return who

    def finish(self, conn: Any) -> None:
        """Close the tallies: each workload's worst five minutes, and the wasted work of its no-notice losses
        from the controller's own ``lost`` events in the outbox on ``conn``."""
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


class OutboxRelay:
    """The outbox as the relay would publish it: each new controller event to the exclusion watcher, counted."""

    def __init__(self, conn: Any, stream: ExclusionStream) -> None:
        self.conn, self.stream, self.last, self.held, self.passes = conn, stream, 0, 0, 0
        self.kinds: dict[str, int] = defaultdict(int)

    def feed(self, now: datetime) -> None:
        """Read the outbox's new events, count them by kind, and hand the controllers' own to the exclusion
        watcher (its own events are not fed back)."""
        rows = self.conn.execute("SELECT id, payload FROM outbox WHERE id > %s ORDER BY id", (self.last,)).fetchall()
        for n, payload in rows:
            self.last = max(self.last, int(n))
            event = Event.from_json(bytes(payload))
            self.kinds[str(event.kind)] += 1
            if event.attributes.get("exclusion_cause") == "full":   # of the exclusions, those of a full pool
                self.kinds["excluded-full"] += 1
            if event.source != "exclusion-watcher":
                self.stream.feed(event, now)
