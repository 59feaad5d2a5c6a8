"""``SimulatedRegion``: the provider contract implemented by the simulated region, in process.

It wraps the engine with an injected clock: every call first runs the engine up to ``clock.now()``, so with a
``WallClock`` it is a live region and with a ``VirtualClock`` a replay. The orchestrator's project holds only
what was launched through ``launch``; other tenants' reclaimable instances fill the pools but are invisible.
"""

from __future__ import annotations

import math
import random
import threading
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from functools import lru_cache
from typing import Any, Protocol

from contracts.events import Event
from contracts.pools import Pool, PoolCatalogue, PurchaseModel
from contracts.provider import (
    USER_DATA_LIMIT_B64,
    Advisory,
    Clock,
    ForwardCapacity,
    Instance,
    InstanceStatus,
    LaunchRequest,
    Notice,
    OwnerTags,
    QuotaHeadroom,
    RateCard,
    RateCardEntry,
    ReclaimReceipt,
    Reservation,
    user_data_size_b64,
)
from contracts.provider_errors import CapacityUnavailable, InvalidRequest, NotFound, NotOwned, QuotaExceeded
from contracts.subjects import EventKind

from .config import RegionConfig
from .economics import price_factor
from .engine import Inst, RegionEngine, SimEvent, Stats
from .topology import HALLS, PoolSpec

__all__ = ["PROJECT", "Engine", "SimulatedRegion", "price_factor"]

PROJECT = "sco-orchestrator"


class Engine(Protocol):
    """What ``SimulatedRegion`` drives: the region's own ``RegionEngine``, or a recorded history replayed
    (``controllers.replay.trace_region.TraceEngine``). Time is float seconds since ``start``."""

    specs: tuple[PoolSpec, ...]
    index: dict[str, int]
    live: list[dict[str, Inst]]
    by_id: dict[str, Inst]
    owned: dict[str, Inst]
    owned_changes: int   # bumped whenever ``owned``'s listing changes: one came, went or got its notice
    aggregates: dict[str, list[int]]
    start: datetime
    now: float
    stats: Stats
    on_event: list[Callable[[SimEvent], None]]
    on_notice: list[Callable[[Inst], None]]
    on_advisory: list[Callable[[Inst, float, float], None]]
    on_rate_card: list[Callable[[float, list[tuple[int, float, int, int]]], None]]

    def at(self, t: float) -> datetime:
        """Simulation second ``t`` as a time."""
    def seconds(self, when: datetime) -> float:
        """A time as simulation seconds."""
    def run_until(self, t: float) -> None:
        """Run every scheduled event up to second ``t``."""
    def new_id(self) -> str:
        """A new instance id."""
    def add(self, inst: Inst) -> None:
        """Track a new instance."""
    def emit(self, ev: SimEvent) -> None:
        """Hand one simulated event to every listener."""
    def delete(self, instance_id: str) -> None:
        """Remove an instance."""
    def free(self, i: int) -> int:
        """Free slots of pool ``i`` now."""
    def instances(self, i: int) -> int:
        """Instances in pool ``i`` now, every tenant's (the ranking's features read it)."""
    def capacity(self, i: int, t: float) -> int:
        """Pool ``i``'s reclaimable slots at second ``t``."""
    def capacities(self, agg: str, t: float) -> list[int]:
        """``capacity`` at ``t`` of each pool of ``aggregates[agg]``, in that order."""
    def intensity(self, agg: str, t: float) -> float:
        """Guaranteed demand's intensity on ``agg`` at ``t``."""
    def pool_rate_pct_h(self, i: int) -> float:
        """Pool ``i``'s reclaims per 100 instance-hours so far."""
    def doom(self, inst: Inst, cause: str, *, drill: bool, notice: bool | None = None) -> None:
        """Schedule an instance's reclaim (its notice, then its deletion)."""
    def hall_reclaim(self, hall: str, *, drill: bool = False) -> list[Inst]:
        """Reclaim every instance of ours in ``hall`` at once; them."""


class SimulatedRegion:
    def __init__(self, config: RegionConfig, clock: Clock, *, start: datetime | None = None,
                 engine: Engine | None = None) -> None:
        self.config = config
        self.clock = clock
        self.engine: Engine = engine if engine is not None else RegionEngine(config, start or clock.now())
        self.lock = threading.RLock()
        self._rate_card: RateCard | None = None
        self._event_ids = random.Random(f"{config.seed}:event-ids")
        self.engine.on_rate_card.append(self._keep_rate_card)
        self.cache_listing = True        # False: build every listed ``Instance`` afresh (the path before this cache
        self._listing: dict[tuple[str, bool], Instance] = {}   # was added; the equivalence test runs both)
        # the listings handed out since our instances last changed (``RegionEngine.owned_changes``), per tag filter
        self._listings: tuple[int, dict[tuple[tuple[str, str], ...], tuple[Instance, ...]]] = (-1, {})
        self._reservations: dict[str | None, tuple[tuple[int, ...], tuple[Reservation, ...]]] = {}

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its lock (a replay's warm-up kept on disk: ``controllers.replay.disk_cache``)."""
        return {k: v for k, v in self.__dict__.items() if k != "lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.lock = threading.RLock()

    @property
    def region(self) -> str:
        """The region this provider serves."""
        return self.config.region

    def sync(self) -> None:
        """Run the simulation up to the clock's now."""
        with self.lock:
            self.engine.run_until(self.engine.seconds(self.clock.now()))

    def to_event(self, ev: SimEvent) -> Event:
        """A simulated event as a lifecycle ``Event`` of the region."""
        event_id = uuid.UUID(int=self._event_ids.getrandbits(128), version=4)
        return Event(event_id=event_id, kind=ev.kind, time=self.engine.at(ev.time),
                     region=self.region, partition=ev.partition or None, pool=ev.pool or None,
                     instance=ev.instance or None, workload=ev.workload or None, cause=ev.cause, drill=ev.drill,
                     source="simregion", attributes=ev.attributes)

    def notice_of(self, inst: Inst) -> Notice:
        """The reclaim notice of a doomed instance."""
        e = self.engine
        pool = e.specs[inst.pool].pool
        assert inst.notice_at is not None and inst.terminate_at is not None
        return Notice(region=self.region, instance_id=inst.id, pool_id=pool.pool_id, hall=pool.hall,
                      issued_at=e.at(inst.notice_at), terminate_at=e.at(inst.terminate_at), cause=inst.cause,
                      drill=inst.drill)

    def advisory_of(self, inst: Inst, at: float, expected: float) -> Advisory:
        """The advisory for an instance whose reclaim is expected at ``expected``."""
        e = self.engine
        return Advisory(region=self.region, instance_id=inst.id, pool_id=e.specs[inst.pool].pool.pool_id,
                        issued_at=e.at(at), expected_at=e.at(expected), probability=0.9)

    # --- read side -------------------------------------------------------------------------------------
    def catalogue(self) -> PoolCatalogue:
        """Pools; a reclaimable pool's ``interruption_rate_pct_h`` is what this region has observed so far
        (the configured rate until an hour has passed)."""
        self.sync()
        with self.lock:
            return PoolCatalogue(pools=tuple(self._observed(i) for i in range(len(self.engine.specs))),
                                 source=f"simregion:{self.region}:seed={self.config.seed}")

    def _observed(self, i: int) -> Pool:
        pool = self.engine.specs[i].pool
        if pool.purchase_model is not PurchaseModel.RECLAIMABLE:
            return pool
        seen = self.engine.pool_rate_pct_h(i) if self.engine.now >= 3600 else self.config.reclaim_rate_pct_h
        return pool.model_copy(update={"interruption_rate_pct_h": Decimal(str(round(seen, 2)))})

    def _keep_rate_card(self, t: float, rows: list[tuple[int, float, int, int]]) -> None:
        e = self.engine
        entries = []
        for i, u, free, _ in rows:
            pool = e.specs[i].pool
            factor = Decimal(str(round(price_factor(u, self.config.price_demand), 4)))
            rate = (pool.guaranteed_rate_eur_h * factor).quantize(Decimal("0.0001"))
            entries.append(RateCardEntry(pool_id=pool.pool_id, rate_eur_h=rate,
                                         guaranteed_rate_eur_h=pool.guaranteed_rate_eur_h,
                                         utilisation=round(u, 4), free_instances=free))
        self._rate_card = RateCard(region=self.region, time=e.at(t),
                                   valid_for=timedelta(seconds=self.config.rate_card_s), entries=tuple(entries))

    def rate_card(self) -> RateCard:
        """The current rate card (one entry per pool, refreshed every five minutes)."""
        self.sync()
        assert self._rate_card is not None
        return self._rate_card

    def reservations(self, business_unit: str | None = None) -> tuple[Reservation, ...]:
        """Committed capacity, of one business unit or of all when ``business_unit`` is None."""
        self.sync()
        e = self.engine
        chosen = [i for i, s in enumerate(e.specs) if s.pool.purchase_model is PurchaseModel.COMMITTED
                  and (business_unit is None or s.pool.business_unit == business_unit)]
        in_use = tuple(len(e.live[i]) for i in chosen)
        # the same answer while no committed instance came or went: the pydantic models are built again only then
        # (a controller asks every pass; building them was a twentieth of a replayed pass)
        last = self._reservations.get(business_unit)
        if last is not None and last[0] == in_use:
            return last[1]
        out = tuple(Reservation(reservation_id=f"lease-{s.pool.pool_id}", business_unit=s.pool.business_unit or "",
                                pool_id=s.pool.pool_id, instances=s.slots, in_use=n,
                                start=e.start - timedelta(days=30), end=e.start + timedelta(days=335))
                    for s, n in zip((e.specs[i] for i in chosen), in_use, strict=True))
        self._reservations[business_unit] = (in_use, out)
        return out

    def forward_free(self, horizon: timedelta) -> dict[str, int]:
        """Each reclaimable pool's expected free instances ``horizon`` ahead: ``forward_capacity``'s figure without
        its models (the replay's ranking feed reads this alone, every five minutes of a month)."""
        self.sync()
        e = self.engine
        later = e.now + horizon.total_seconds()
        return {e.specs[i].pool.pool_id: max(cap - len(e.live[i]), 0)
                for agg, pools in e.aggregates.items() for i, cap in zip(pools, e.capacities(agg, later), strict=True)}

    def forward_capacity(self, horizon: timedelta) -> tuple[ForwardCapacity, ...]:
        """Expected free reclaimable capacity per pool over the next ``horizon``."""
        free_later = self.forward_free(horizon)
        e, h = self.engine, horizon.total_seconds()
        out = []
        later = e.now + h
        start, end = e.at(e.now), e.at(later)
        for agg, pools in e.aggregates.items():
            lam = self.config.reclaim_rate_pct_h / 100.0 * h / 3600.0 * e.intensity(agg, later)
            for i in pools:
                pid = e.specs[i].pool.pool_id
                out.append(ForwardCapacity(pool_id=pid, start=start, end=end, expected_free_instances=free_later[pid],
                                           reclaim_probability=round(1.0 - math.exp(-lam), 4)))
        return tuple(out)

    def _owned(self) -> list[Inst]:
        return list(self.engine.owned.values())

    def quota_headroom(self) -> QuotaHeadroom:
        """The project's quota headroom."""
        self.sync()
        mine = self._owned()
        specs = self.engine.specs
        return QuotaHeadroom(project=PROJECT, instances_limit=self.config.quota_instances, instances_used=len(mine),
                             vcpu_limit=self.config.quota_vcpu, vcpu_used=sum(i.vcpu for i in mine),
                             memory_mib_limit=self.config.quota_vcpu * 8 * 1024,
                             memory_mib_used=sum(specs[i.pool].pool.memory_gib * 1024 for i in mine))

    def _instance(self, inst: Inst) -> Instance:
        e = self.engine
        pool = e.specs[inst.pool].pool
        status = InstanceStatus.NOTIFIED if inst.notice_at is not None else InstanceStatus.ACTIVE
        return Instance(instance_id=inst.id, name=inst.name, region=self.region, pool_id=pool.pool_id,
                        hall=pool.hall, status=status, tags=inst.tags, metadata=dict(inst.metadata),
                        launched_at=e.at(inst.launched))

    def list_instances(self, tags: Mapping[str, str] | None = None) -> tuple[Instance, ...]:
        """Our instances (those matching ``tags``). An instance's listing changes only with its notice, so its
        ``Instance`` is built once per state and handed out again (``cache_listing``; the replay through the
        controller lists every instance several times a pass)."""
        self.sync()
        with self.lock:
            wanted = tuple((k, str(v)) for k, v in (tags or {}).items())
            if self.cache_listing:   # the same tuple again while none of ours came, went or got its notice
                version, memo = self._listings
                if version != self.engine.owned_changes:
                    memo = {}
                    self._listings = (self.engine.owned_changes, memo)
                hit = memo.get(wanted)
                if hit is None:
                    hit = memo[wanted] = self._listed_matching(wanted)
                return hit
            return self._listed_matching(wanted)

    def _listed_matching(self, wanted: tuple[tuple[str, str], ...]) -> tuple[Instance, ...]:
        out = []
        for inst in self._owned():
            if wanted and not _matches(tuple(inst.tags), wanted):
                continue
            out.append(self._listed(inst))
        return tuple(out)

    def _listed(self, inst: Inst) -> Instance:
        if not self.cache_listing:
            return self._instance(inst)
        key = (inst.id, inst.notice_at is not None)
        hit = self._listing.get(key)
        if hit is None:
            if len(self._listing) > 4 * len(self.engine.by_id) + 1024:   # forget the instances long gone
                live = {i.id for i in self._owned()}
                self._listing = {k: v for k, v in self._listing.items() if k[0] in live}
            hit = self._listing[key] = self._instance(inst)
        return hit

    def instance(self, instance_id: str) -> Instance:
        """One instance of ours; raises NotFound otherwise."""
        with self.lock:
            inst = self.engine.by_id.get(instance_id)
            if inst is None or not inst.owned:
                raise NotFound("instance", instance_id)
            return self._instance(inst)

    def user_data(self, instance_id: str) -> str | None:
        """The user-data the instance's launch sent, byte for byte (``UserDataReadback``); None when it sent none.

        Raises:
            NotFound: no such instance in the orchestrator's project (another tenant's is not shown either).
        """
        with self.lock:
            inst = self.engine.by_id.get(instance_id)
            if inst is None or not inst.owned:
                raise NotFound("instance", instance_id)
            return inst.user_data

    def notice(self, instance_id: str) -> Notice | None:
        """The metadata mirror: the notice for this instance, if one is out."""
        self.sync()
        with self.lock:
            inst = self.engine.by_id.get(instance_id)
            if inst is None:
                raise NotFound("instance", instance_id)
            return self.notice_of(inst) if inst.notice_at is not None else None

    # --- write side ------------------------------------------------------------------------------------
    def launch(self, request: LaunchRequest) -> tuple[Instance, ...]:
        """Launch ``request.count`` instances, all or nothing; raises the provider contract's errors."""
        self.sync()
        with self.lock:
            e = self.engine
            if request.pool_id not in e.index:
                raise NotFound("pool", request.pool_id, tuple(e.index))
            i = e.index[request.pool_id]
            pool = e.specs[i].pool
            size = user_data_size_b64(request.user_data or "")
            if size > USER_DATA_LIMIT_B64:  # refused before anything is launched, as Nova does
                raise InvalidRequest("user_data", f"{size} bytes of base64",
                                     f"the provider accepts at most {USER_DATA_LIMIT_B64} (Nova's limit); send a "
                                     "smaller document, e.g. let the agent fetch its bundle from the distributor")
            quota = self.quota_headroom()
            if quota.instances_used + request.count > quota.instances_limit:
                raise QuotaExceeded("instances", request.count, quota.instances_used, quota.instances_limit, PROJECT)
            if quota.vcpu_used + request.count * pool.vcpu > quota.vcpu_limit:
                raise QuotaExceeded("cores", request.count * pool.vcpu, quota.vcpu_used, quota.vcpu_limit, PROJECT)
            free = e.free(i)
            if request.count > free:
                raise CapacityUnavailable(pool.pool_id, request.count, free)
            tags = request.tags
            meta = {**request.metadata, "sco_pool": pool.pool_id}
            made = []
            for n in range(request.count):
                inst = Inst(id=e.new_id(), pool=i, vcpu=pool.vcpu, launched=e.now, owned=True,
                            name=f"{request.name_prefix}-{request.owner.workload}-g{request.owner.generation}-{n}",
                            tags=tags, metadata=meta, user_data=request.user_data)
                e.add(inst)
                e.emit(SimEvent(EventKind.LAUNCHED, e.now, pool.pool_id, inst.id, "launch",
                                 workload=request.owner.workload, partition=request.owner.partition,
                                 attributes={"generation": request.owner.generation, "hall": pool.hall}))
                made.append(self._instance(inst))
            return tuple(made)

    def terminate(self, instance_id: str) -> None:
        """Delete an instance of ours; raises NotFound, or NotOwned without the owner tags."""
        self.sync()
        with self.lock:
            inst = self.engine.by_id.get(instance_id)
            if inst is None or not inst.owned:
                raise NotFound("instance", instance_id)
            missing = OwnerTags.missing(inst.tags)
            if missing:
                raise NotOwned(instance_id, missing, inst.tags)
            inst.cause = "terminated-by-owner"  # deleted now: never doomed, so its room is counted back
            self.engine.delete(instance_id)

    def reclaim(self, instance_ids: tuple[str, ...], *, drill: bool = True) -> ReclaimReceipt:
        """The reclaim API (ADR-33): notices now through the ordinary path, deletion after the window."""
        self.sync()
        with self.lock:
            e = self.engine
            found = []
            for iid in instance_ids:
                inst = e.by_id.get(iid)
                if inst is None or not inst.owned:
                    raise NotFound("instance", iid)
                found.append(inst)
            for inst in found:
                if not inst.doomed:
                    e.doom(inst, "drill" if drill else "reclaimed", drill=drill, notice=True)
            return ReclaimReceipt(instances=tuple(i.id for i in found), terminate_at=e.at(e.now + self.config.notice_s),
                                  drill=drill)

    def hall_reclaim(self, hall: str, *, drill: bool = False) -> tuple[str, ...]:
        """Reclaim every instance of ours in ``hall`` (a game day); their ids."""
        self.sync()
        with self.lock:
            if hall not in HALLS:
                raise NotFound("hall", hall, HALLS)
            return tuple(i.id for i in self.engine.hall_reclaim(hall, drill=drill))


@lru_cache(maxsize=65536)
def _matches(tags: tuple[str, ...], wanted: tuple[tuple[str, str], ...]) -> bool:
    """The instance's ``sco:`` tags carry every wanted key with the wanted value (an instance's tags never change)."""
    found = OwnerTags.parse(tags)
    return all(found.get(k) == v for k, v in wanted)
