"""A recorded history as a provider: the trace's pools, rate cards and reclaim waves on virtual time, behind the
same ``SimulatedRegion`` (the provider protocol) the production controller drives (ADR-03's report).

``TraceEngine`` replays a ``Trace`` — what ``sco contracts report`` reads from ClickHouse, or what
``trace_from_region`` records — instead of simulating other tenants:

- **Room.** A reclaimable pool lends us what its last rate card showed free (other tenants' instances only: the
  history holds none of ours), less what a wave that hit us still holds (``Reclaim.hold``), less what we hold.
  Committed and guaranteed pools lend their slots. A launch beyond that is refused as the provider refuses it
  (``CapacityUnavailable``).
- **Reclaims.** A wave takes as many victims as the history counted, drawn from everyone in the pool — the other
  tenants the card counted and our live instances — uniformly (seeded); a wave that took the whole pool (a hall
  reclaim) takes all of ours. A victim of ours loses its notice with the wave's no-notice share; a notice is
  followed by deletion after the notice window. The other tenants' victims are announced too (events with no
  workload, ids ``trace-…``) so the pool's reclaim count — the scorer's input — is the history's.
- **Rates** are the rate cards' own; the observed interruption rate of a pool is its reclaims per 100
  instance-hours held on the cards. The history has no forward-capacity calendar or advisories: forward capacity
  is the free room now, and no advisory is sent.
"""

from __future__ import annotations

import heapq
import math
import random
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from contracts.pools import PoolCatalogue, PurchaseModel
from contracts.provider import Clock, ForwardCapacity, RateCard, RateCardEntry
from contracts.schema import Contract
from contracts.subjects import EventKind

from ..planning import Caps, Strategy
from ..simregion.clock import VirtualClock
from ..simregion.config import RegionConfig
from ..simregion.records import Inst, SimEvent, Stats, no_notice_cause, owner_of, terminated
from ..simregion.region import SimulatedRegion
from ..simregion.topology import PoolSpec
from .engine import WorkloadOutcome
from .through_controller import Ranker, replay_region
from .trace import Reclaim, Trace

__all__ = ["TRACE_APPROXIMATIONS", "TraceEngine", "TraceRegion", "replay_trace_through_controller"]

TRACE_APPROXIMATIONS = (
    "the region is the recorded history, not a simulation: a pool lends what its rate card showed free (the "
    "history holds none of our instances), less what a wave that hit us holds for its hold time; a wave takes the "
    "victims the history counted from everyone in its pool, ours included, uniformly (the history does not say "
    "how the reclaimer chose); no forward-capacity calendar (forward capacity is "
    "the free room now) and no advisories in the history")

_Card = tuple[float, dict[int, tuple[Decimal, int, int]]]   # seconds, pool index -> (rate, free, others live)


class TraceEngine:
    """The ``simregion.region.Engine`` a ``Trace`` drives (time: seconds since ``trace.start - trace.warmup``)."""

    def __init__(self, trace: Trace, config: RegionConfig) -> None:
        self.config, self.trace = config, trace
        self.start = trace.start - trace.warmup
        self.specs = tuple(PoolSpec(pool=p, slots=trace.capacity.get(p.pool_id, 0)) for p in trace.pools)
        self.index = {s.pool.pool_id: i for i, s in enumerate(self.specs)}
        self.live: list[dict[str, Inst]] = [{} for _ in self.specs]
        self.by_id: dict[str, Inst] = {}
        self.owned: dict[str, Inst] = {}
        self.owned_changes = 0   # ``Engine.owned_changes``
        self.aggregates: dict[str, list[int]] = {}
        for i, s in enumerate(self.specs):
            if self._reclaimable(i):
                self.aggregates.setdefault(s.pool.aggregate, []).append(i)
        self.now = 0.0
        self.stats = Stats()
        self.on_event: list[Callable[[SimEvent], None]] = []
        self.on_notice: list[Callable[[Inst], None]] = []
        self.on_advisory: list[Callable[[Inst, float, float], None]] = []   # the history holds none
        self.on_rate_card: list[Callable[[float, list[tuple[int, float, int, int]]], None]] = []
        self.rates: dict[str, Decimal] = {s.pool.pool_id: s.pool.rate_eur_h for s in self.specs}
        self._free = [0 if self._reclaimable(i) else s.slots for i, s in enumerate(self.specs)]
        self._others = [0] * len(self.specs)
        self._held: list[tuple[float, int, int]] = []            # (until, pool, instances) a wave holds from us
        self._held_now = [0] * len(self.specs)
        self._reclaims = [0] * len(self.specs)
        self._seconds = [0.0] * len(self.specs)                   # instance-seconds on the cards (every tenant)
        self._cards = self._read_cards()
        self._waves = [w for w in trace.reclaims if not w.drill and w.pool_id in self.index]
        self._next_card = self._next_wave = 0
        self._deletes: list[tuple[float, int, str]] = []
        self._seq = 0
        self._victims = random.Random(f"{trace.seed}:trace-victims")
        self._ids = random.Random(f"{trace.seed}:trace-ids:{self.start.isoformat()}")
        self._other = 0

    def _reclaimable(self, i: int) -> bool:
        return self.specs[i].pool.purchase_model is PurchaseModel.RECLAIMABLE

    def _read_cards(self) -> list[_Card]:
        live = dict(self.trace.live)
        rates = dict(self.trace.rate_cards)
        cards = []
        for at, free in self.trace.free:
            others, rate = live.get(at, {}), rates.get(at, {})
            row = {self.index[p]: (rate.get(p, self.rates[p]), f, others.get(p, 0))
                   for p, f in free.items() if p in self.index}
            cards.append((self.seconds(at), row))
        return cards

    # --- plumbing (the ``Engine`` protocol) ------------------------------------------------------------
    def at(self, t: float) -> datetime:
        """Simulation second ``t`` as a time."""
        return self.start + timedelta(seconds=t)

    def seconds(self, when: datetime) -> float:
        """A time as simulation seconds."""
        return (when - self.start).total_seconds()

    def new_id(self) -> str:
        """A new instance id (seeded, so runs repeat)."""
        return str(uuid.UUID(int=self._ids.getrandbits(128), version=4))

    def emit(self, ev: SimEvent) -> None:
        """Hand one simulated event to every listener."""
        for fn in self.on_event:
            fn(ev)

    def add(self, inst: Inst) -> None:
        """Track a new instance."""
        self.live[inst.pool][inst.id] = inst
        self.by_id[inst.id] = inst
        if inst.owned:
            self.owned[inst.id] = inst
            self.owned_changes += 1

    def delete(self, instance_id: str) -> None:
        """Forget an instance (one unknown is no error)."""
        inst = self.by_id.pop(instance_id, None)
        if inst is None:
            return
        del self.live[inst.pool][inst.id]
        if self.owned.pop(inst.id, None) is not None:
            self.owned_changes += 1
        self.emit(terminated(inst, self.specs[inst.pool].pool.pool_id, self.now))

    def capacity(self, i: int, t: float) -> int:
        """What pool ``i`` lends us now (``t`` is ignored: the history has no calendar ahead)."""
        return max(self._free[i] - self._held_now[i], 0)

    def free(self, i: int) -> int:
        """Free slots of pool ``i`` now."""
        return max(self.capacity(i, self.now) - len(self.live[i]), 0)

    def capacities(self, agg: str, t: float) -> list[int]:
        """``capacity`` at ``t`` of each pool of ``aggregates[agg]``, in that order."""
        return [self.capacity(i, t) for i in self.aggregates[agg]]

    def instances(self, i: int) -> int:
        """Instances in pool ``i`` now, every tenant's: the other tenants' its last card counted, and ours."""
        return self._others[i] + len(self.live[i])

    def intensity(self, agg: str, t: float) -> float:
        """Guaranteed demand's intensity: flat in a recorded trace."""
        return 1.0

    def pool_rate_pct_h(self, i: int) -> float:
        """Pool ``i``'s reclaims per 100 instance-hours so far."""
        hours = self._seconds[i] / 3600.0
        return 100.0 * self._reclaims[i] / hours if hours else 0.0

    # --- the event loop --------------------------------------------------------------------------------
    def run_until(self, t: float) -> None:
        """Every card, wave, end of a hold and deletion up to ``t``, in time order (at one instant: deletions,
        then holds ending, then the card, then the wave)."""
        while True:
            step = self._next_at()
            if step is None or step[0] > t:
                break
            self.now = max(self.now, step[0])
            step[1]()
        self.now = max(self.now, t)

    def _next_at(self) -> tuple[float, Callable[[], None]] | None:
        options: list[tuple[float, int, Callable[[], None]]] = []
        if self._deletes:
            options.append((self._deletes[0][0], 0, self._pop_delete))
        if self._held:
            options.append((self._held[0][0], 1, self._pop_hold))
        if self._next_card < len(self._cards):
            options.append((self._cards[self._next_card][0], 2, self._card))
        if self._next_wave < len(self._waves):
            options.append((self.seconds(self._waves[self._next_wave].time), 3, self._wave))
        if not options:
            return None
        when, _, fn = min(options, key=lambda o: (o[0], o[1]))
        return when, fn

    def _pop_delete(self) -> None:
        self.delete(heapq.heappop(self._deletes)[2])

    def _pop_hold(self) -> None:
        _, i, n = heapq.heappop(self._held)
        self._held_now[i] -= n

    def _card(self) -> None:
        t, row = self._cards[self._next_card]
        self._next_card += 1
        step = self.config.rate_card_s
        rows = []
        for i, (rate, free, others) in sorted(row.items()):
            self.rates[self.specs[i].pool.pool_id] = rate
            self._free[i] = free
            self._others[i] = others
            self._seconds[i] += (others + len(self.live[i])) * step
            cap = free + others
            rows.append((i, (cap - free) / cap if cap else 1.0, self.free(i), cap))
        for fn in self.on_rate_card:
            fn(t, rows)

    def _wave(self) -> None:
        w = self._waves[self._next_wave]
        self._next_wave += 1
        i = self.index[w.pool_id]
        hit = self.victims_of(w, i)
        for inst in hit:
            self.doom(inst, "reclaimed", drill=False, notice=self._victims.random() >= w.no_notice_share)
        if hit:
            heapq.heappush(self._held, (self.now + w.hold.total_seconds(), i, len(hit)))
            self._held_now[i] += len(hit)
        self._others_taken(w, i, len(hit))

    def victims_of(self, w: Reclaim, i: int) -> list[Inst]:
        """Our instances the wave takes. The history counts its victims among other tenants' instances; the same
        demand with ours in the pool takes as many victims from everyone there, so ours are drawn with the
        others (uniformly: the history does not say how the reclaimer chose). A wave that took the whole pool
        (a hall reclaim) takes all of ours; a wave with no recorded count takes each of ours with its share."""
        ours = [inst for inst in self.live[i].values() if not inst.doomed]
        if not ours or w.share >= 1.0:
            return ours
        if not w.victims:
            return [inst for inst in ours if self._victims.random() < w.share]
        everyone = len(ours) + self._others[i]
        drawn = self._victims.sample(range(everyone), min(w.victims, everyone))
        return [ours[n] for n in sorted(drawn) if n < len(ours)]

    def _others_taken(self, w: Reclaim, i: int, ours: int) -> None:
        """The history's victims beyond ours, announced with no workload: the pool's reclaim count stays the
        history's (what the scorer reads)."""
        victims = w.victims or math.ceil(w.share * self._others[i])
        self._reclaims[i] += max(victims, ours)
        for _ in range(max(victims - ours, 0)):
            self._other += 1
            kind = EventKind.NO_NOTICE_LOSS if self._victims.random() < w.no_notice_share else EventKind.NOTICE
            self.emit(SimEvent(kind, self.now, w.pool_id, f"trace-{self._other}", "reclaimed",
                               attributes={"owned": False}))

    def doom(self, inst: Inst, cause: str, *, drill: bool, notice: bool | None = None) -> None:
        """Notice now and deletion after the notice window; without notice, deletion now."""
        inst.doomed, inst.cause, inst.drill = True, cause, drill
        pool = self.specs[inst.pool].pool
        if not drill:
            self.stats.reclaimed += 1
            if notice is False:
                self.stats.no_notice += 1
        if notice is False:
            inst.terminate_at = self.now
            self.emit(SimEvent(EventKind.NO_NOTICE_LOSS, self.now, pool.pool_id, inst.id, no_notice_cause(cause),
                               drill, *owner_of(inst), attributes={"owned": inst.owned}))
            self.delete(inst.id)
            return
        inst.notice_at, inst.terminate_at = self.now, self.now + self.config.notice_s
        self.owned_changes += inst.owned
        for fn in self.on_notice:
            fn(inst)
        self.emit(SimEvent(EventKind.NOTICE, self.now, pool.pool_id, inst.id, cause, drill, *owner_of(inst),
                           attributes={"terminate_at": self.at(inst.terminate_at).isoformat(), "advised": False}))
        self._seq += 1
        heapq.heappush(self._deletes, (inst.terminate_at, self._seq, inst.id))

    def hall_reclaim(self, hall: str, *, drill: bool = False) -> list[Inst]:
        """Our reclaimable instances in ``hall`` get their notice now (the reclaim API's drill)."""
        victims = [inst for i, s in enumerate(self.specs) if s.pool.hall == hall and self._reclaimable(i)
                   for inst in list(self.live[i].values()) if not inst.doomed]
        for inst in victims:
            self.doom(inst, "hall-reclaim", drill=drill)
        return victims


class TraceRegion(SimulatedRegion):
    """``SimulatedRegion`` over a ``TraceEngine``: the provider protocol, with the history's own rates."""

    def __init__(self, trace: Trace, config: RegionConfig, clock: Clock) -> None:
        self.trace_engine = TraceEngine(trace, config)
        super().__init__(config, clock, engine=self.trace_engine)

    def _keep_rate_card(self, t: float, rows: list[tuple[int, float, int, int]]) -> None:
        e = self.trace_engine
        entries = tuple(RateCardEntry(pool_id=e.specs[i].pool.pool_id, rate_eur_h=e.rates[e.specs[i].pool.pool_id],
                                      guaranteed_rate_eur_h=e.specs[i].pool.guaranteed_rate_eur_h,
                                      utilisation=round(u, 4), free_instances=free)
                        for i, u, free, _ in rows)
        self._rate_card = RateCard(region=self.region, time=e.at(t),
                                   valid_for=timedelta(seconds=self.config.rate_card_s), entries=entries)

    def catalogue(self) -> PoolCatalogue:
        """The catalogue, its source naming the trace."""
        found = super().catalogue()
        return found.model_copy(update={"source": f"trace:{self.region}"})

    def forward_free(self, horizon: timedelta) -> dict[str, int]:
        """No calendar in the history: each reclaimable pool's free room now."""
        self.sync()
        e = self.trace_engine
        return {e.specs[i].pool.pool_id: e.free(i) for pools in e.aggregates.values() for i in pools}

    def forward_capacity(self, horizon: timedelta) -> tuple[ForwardCapacity, ...]:
        """No calendar in the history: the free room now, and the pool's observed reclaim chance over ``horizon``."""
        self.sync()
        e, h = self.trace_engine, horizon.total_seconds()
        out = []
        for pools in e.aggregates.values():
            for i in pools:
                lam = e.pool_rate_pct_h(i) / 100.0 * h / 3600.0
                out.append(ForwardCapacity(pool_id=e.specs[i].pool.pool_id, start=e.at(e.now), end=e.at(e.now + h),
                                           expected_free_instances=e.free(i),
                                           reclaim_probability=round(1.0 - math.exp(-lam), 4)))
        return tuple(out)


def replay_trace_through_controller(trace: Trace, contracts: Mapping[str, Contract], units: Mapping[str, int],
                                    conn: Any, *, strategy: Strategy | None = None, ranker: Ranker | None = None,
                                    pass_interval: timedelta = timedelta(seconds=60),
                                    progress: Callable[[float], None] | None = None,
                                    diagnostics: dict[str, int] | None = None, caps: Caps | None = None,
                                    config: RegionConfig | None = None) -> dict[str, WorkloadOutcome]:
    """``replay_through_controller`` over a recorded history (``trace``: its warm-up, then ``trace.start`` to
    ``trace.end``) instead of the simulated region: ADR-03's report on the production path. The region is a
    ``TraceRegion`` (``TRACE_APPROXIMATIONS``); ``config`` gives its name, notice window, card interval and quota
    (default: the pools' region and the defaults)."""
    region_name = trace.pools[0].region if trace.pools else "r1"
    config = config or RegionConfig(region=region_name)
    clock = VirtualClock(trace.start - trace.warmup)
    region = TraceRegion(trace, config, clock)
    return replay_region(region, clock, trace.start, trace.days, contracts, units, conn, strategy=strategy,
                         ranker=ranker, pass_interval=pass_interval, progress=progress, diagnostics=diagnostics,
                         fast=True, caps=caps)
