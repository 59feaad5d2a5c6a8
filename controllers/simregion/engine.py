"""The simulated region's discrete-event engine: guaranteed-tenant demand per aggregate (daily cycle, bursts,
hall-wide reclaims), the reclaimer, notices, advisories, refills by other tenants and the rate card.

With ``room_first`` (the replay's traces), guaranteed requests are booked ``HORIZON_S`` ahead (the forward
calendar sees them), land in the room that reclaimable work leaves free in their aggregate, and reclaim only
what does not fit (ADR-05: the reclaimer selects victims when a guaranteed request cannot be placed); they
hold their room for ``guaranteed_hold_s``. So a deep aggregate absorbs demand and a full one is reclaimed —
the effect ADR-08's depth-first placement exploits. The demand rate is calibrated on the fly to keep the
configured reclaim rate, which takes simulated hours; a live region at compressed rates runs without it
(every request reclaims).

Time is float seconds since the region's start; ``run_until`` processes every scheduled event up to a time,
so the same engine runs live (driven by the wall clock) and in replay (a month in seconds). Every random
choice comes from RNGs derived from the seed, so a seed gives the same history.
"""

from __future__ import annotations

import heapq
import math
import random
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from contracts.pools import PurchaseModel
from contracts.subjects import EventKind

from .config import RegionConfig
from .demand import GuaranteedDemand, poisson
from .reclaimer import select_victims
from .records import Inst, SimEvent, Stats, no_notice_cause, owner_of, terminated
from .topology import HALLS, PoolSpec, build_pools

__all__ = ["Inst", "RegionEngine", "SimEvent", "Stats"]

HORIZON_S = 1800.0  # demand is planned this far ahead, so advisories can precede it


class RegionEngine:
    def __init__(self, config: RegionConfig, start: datetime) -> None:
        self.config = config
        self.start = start
        self.specs: tuple[PoolSpec, ...] = build_pools(config.region, config.pools, config.slot_scale)
        self.index = {s.pool.pool_id: i for i, s in enumerate(self.specs)}
        self.live: list[dict[str, Inst]] = [{} for _ in self.specs]
        self.by_id: dict[str, Inst] = {}
        self.owned: dict[str, Inst] = {}   # the orchestrator's instances of ``by_id``, in the same order
        self.owned_changes = 0   # counts every change of ``owned``'s listing: one came, went or got its notice
        self.aggregates: dict[str, list[int]] = {}
        for i, s in enumerate(self.specs):
            if s.pool.purchase_model is PurchaseModel.RECLAIMABLE:
                self.aggregates.setdefault(s.pool.aggregate, []).append(i)
        self.agg_of = {i: s.pool.aggregate for i, s in enumerate(self.specs)}
        self.hall_down_until: dict[str, float] = dict.fromkeys(HALLS, -1.0)
        self.demand = GuaranteedDemand(config, start, {a: sum(self.specs[i].slots for i in pools)
                                                       for a, pools in self.aggregates.items()})
        self._shapes = {a: [(self.specs[i].slots, self.specs[i].pool.vcpu) for i in pools]
                        for a, pools in self.aggregates.items()}
        self.slot_vcpu = {a: sum(self.specs[i].slots * self.specs[i].pool.vcpu for i in pools) or 1
                          for a, pools in self.aggregates.items()}
        self.live_vcpu: dict[str, int] = dict.fromkeys(self.aggregates, 0)  # reclaimable, not doomed
        self.used_vcpu: dict[str, int] = dict.fromkeys(self.aggregates, 0)  # every live instance's, doomed too
        self.now = 0.0
        self.stats = Stats()
        self.pool_reclaims = [0] * len(self.specs)
        self.pool_seconds = [0.0] * len(self.specs)  # instance-seconds per pool
        self._pool_last = [0.0] * len(self.specs)
        self._reclaimable_live = 0
        self._last_area = 0.0
        self._queue: list[tuple[float, int, str, Any]] = []
        self._seq = 0
        seed = config.seed
        self._demand = random.Random(f"{seed}:demand")
        self._victims = random.Random(f"{seed}:victims")
        self._notice = random.Random(f"{seed}:notice")
        self._refill = random.Random(f"{seed}:refill")
        self._hold = random.Random(f"{seed}:hold")
        # ids depend on the start too: two runs of one seed (a history and a live region) never share an id
        self._ids = random.Random(f"{seed}:ids:{start.isoformat()}")
        self.on_event: list[Callable[[SimEvent], None]] = []
        self.on_notice: list[Callable[[Inst], None]] = []
        self.on_advisory: list[Callable[[Inst, float, float], None]] = []  # instance, issued, expected
        self.on_rate_card: list[Callable[[float, list[tuple[int, float, int, int]]], None]] = []
        halls = len(HALLS)
        hall_pct = config.hall_reclaims_per_30d / (30 * 24) * 100.0 / halls
        self._pct = max(config.reclaim_rate_pct_h - hall_pct, 0.0)
        # hall-wide reclaims come without an advisory: the others carry a little more to keep the share
        hall_share = hall_pct / config.reclaim_rate_pct_h if config.reclaim_rate_pct_h else 0.0
        self._advisory_p = min(1.0, config.advisory_share / max(1.0 - hall_share, 1e-9))
        self._demands, self._victim_total = 0, 0  # observed victims per demand calibrates the demand rate
        self._advised_total = 0  # observed advised victims calibrate how often a request is advised
        if config.background:
            self._populate()
        self._push(0.0, "tick", None)

    # --- plumbing --------------------------------------------------------------------------------------
    def _push(self, when: float, op: str, arg: Any) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (when, self._seq, op, arg))

    def new_id(self) -> str:
        """A new instance id (seeded, so runs repeat)."""
        return str(uuid.UUID(int=self._ids.getrandbits(128), version=4))

    def at(self, t: float) -> datetime:
        """Simulation second ``t`` as a time."""
        return self.start + timedelta(seconds=t)

    def seconds(self, when: datetime) -> float:
        """A time as simulation seconds."""
        return (when - self.start).total_seconds()

    def _emit(self, ev: SimEvent) -> None:
        for fn in self.on_event:
            fn(ev)

    def emit(self, ev: SimEvent) -> None:
        """An event of the provider's API (a launch) to the engine's listeners."""
        self._emit(ev)

    def delete(self, instance_id: str) -> None:
        """The owner deletes an instance now (its room is counted back)."""
        self._op_delete(instance_id)

    def _area(self) -> None:
        self.stats.instance_seconds += self._reclaimable_live * (self.now - self._last_area)
        self._last_area = self.now

    def _reclaimable(self, i: int) -> bool:
        return self.specs[i].pool.purchase_model is PurchaseModel.RECLAIMABLE

    def _pool_area(self, i: int) -> None:
        self.pool_seconds[i] += len(self.live[i]) * (self.now - self._pool_last[i])
        self._pool_last[i] = self.now

    def pool_rate_pct_h(self, i: int) -> float:
        """Observed reclaims per 100 instance-hours of pool ``i`` so far."""
        self._pool_area(i)
        hours = self.pool_seconds[i] / 3600.0
        return 100.0 * self.pool_reclaims[i] / hours if hours else 0.0

    def add(self, inst: Inst) -> None:
        """Place an instance in its pool."""
        self._area()
        self._pool_area(inst.pool)
        self.live[inst.pool][inst.id] = inst
        self.by_id[inst.id] = inst
        if inst.owned:
            self.owned[inst.id] = inst
            self.owned_changes += 1
        if self._reclaimable(inst.pool):
            self._reclaimable_live += 1
            self.used_vcpu[self.agg_of[inst.pool]] += inst.vcpu
            if not inst.doomed:
                self.live_vcpu[self.agg_of[inst.pool]] += inst.vcpu

    def remove(self, inst: Inst) -> None:
        """Take an instance out of its pool."""
        self._area()
        self._pool_area(inst.pool)
        del self.live[inst.pool][inst.id]
        del self.by_id[inst.id]
        if self.owned.pop(inst.id, None) is not None:
            self.owned_changes += 1
        if self._reclaimable(inst.pool):
            self._reclaimable_live -= 1
            self.used_vcpu[self.agg_of[inst.pool]] -= inst.vcpu
            if not inst.doomed:
                self.live_vcpu[self.agg_of[inst.pool]] -= inst.vcpu

    def intensity(self, agg: str, t: float) -> float:
        """Guaranteed demand's intensity on ``agg`` at ``t``."""
        return self.demand.intensity(agg, t)

    def held_vcpu(self, agg: str, t: float) -> int:
        """vCPU of ``agg`` guaranteed demand holds at ``t``."""
        return self.demand.held(agg, t, self.now)

    def _factor(self, agg: str, t: float) -> float:
        """Share of its slots a reclaimable pool of the aggregate can hold at ``t`` (hall outages aside)."""
        factor = 1.0 - 0.5 * max(self.demand.utilisation(agg, t) - 0.55, 0.0)
        return factor * max(0.0, 1.0 - self.held_vcpu(agg, t) / self.slot_vcpu[agg])

    def capacity(self, i: int, t: float) -> int:
        """Instances pool ``i`` can hold at ``t``: reclaimable slots shrink as guaranteed demand grows and as
        landed guaranteed requests take room."""
        spec = self.specs[i]
        if spec.pool.purchase_model is not PurchaseModel.RECLAIMABLE:
            return spec.slots
        if t < self.hall_down_until[spec.pool.hall]:
            return 0
        return int(spec.slots * self._factor(spec.pool.aggregate, t))

    def capacities(self, agg: str, t: float) -> list[int]:
        """``capacity`` of each pool of ``agg`` at ``t``, the aggregate's factor computed once."""
        pools = self.aggregates[agg]
        if t < self.hall_down_until[self.specs[pools[0]].pool.hall]:
            return [0] * len(pools)
        factor = self._factor(agg, t)
        return [int(self.specs[i].slots * factor) for i in pools]

    def overflow_vcpu(self, agg: str, t: float) -> int:
        """vCPU of reclaimable work in the aggregate beyond what its room holds at ``t`` (0: it all fits)."""
        pools = self.aggregates[agg]
        if t < self.hall_down_until[self.specs[pools[0]].pool.hall]:
            return self.live_vcpu[agg]
        factor = self._factor(agg, t)
        room = sum(int(slots * factor) * vcpu for slots, vcpu in self._shapes[agg])
        return max(0, self.live_vcpu[agg] - room)

    def free(self, i: int) -> int:
        """Free slots of pool ``i`` now."""
        return max(self.capacity(i, self.now) - len(self.live[i]), 0)

    def instances(self, i: int) -> int:
        """Instances in pool ``i`` now, every tenant's (each is one of ``live``'s here)."""
        return len(self.live[i])

    def _populate(self) -> None:
        rng = self._refill
        for i, spec in enumerate(self.specs):
            if not self._reclaimable(i):
                continue
            for _ in range(round(spec.slots * self.config.occupancy)):
                self.add(Inst(id=self.new_id(), pool=i, vcpu=spec.pool.vcpu, launched=-rng.uniform(0, 172800.0),
                              owned=False))

    # --- the event loop --------------------------------------------------------------------------------
    def run_until(self, t: float) -> None:
        """Run every scheduled event up to second ``t``."""
        q = self._queue
        while q and q[0][0] <= t:
            when, _, op, arg = heapq.heappop(q)
            self.now = max(self.now, when)
            getattr(self, f"_op_{op}")(arg)
        self.now = max(self.now, t)
        self._area()

    def _op_tick(self, _: Any) -> None:
        c, t, rng = self.config, self.now, self._demand
        self._rate_card()
        dt = c.rate_card_s
        self.demand.prune(t)
        for agg, pools in self.aggregates.items():
            if rng.random() < c.bursts_per_aggregate_day * dt / 86400.0:
                self.demand.burst_start[agg] = t + HORIZON_S
                self.demand.burst_until[agg] = t + HORIZON_S + rng.expovariate(1.0 / c.burst_mean_s)
            hall = self.specs[pools[0]].pool.hall
            n = sum(len(self.live[i]) for i in pools)
            if n == 0 or t + HORIZON_S < self.hall_down_until[hall]:
                continue
            prior = 20.0
            per_demand = (self._victim_total + prior * c.victims_per_reclaim) / (self._demands + prior)
            expected = self._pct / 100.0 * dt / 3600.0 * n * self.intensity(agg, t + HORIZON_S) / per_demand
            for _ in range(poisson(rng, expected)):
                when = t + HORIZON_S + rng.uniform(0.0, dt)
                mean_vcpu = sum(self.specs[i].pool.vcpu * len(self.live[i]) for i in pools) / n
                need = c.victims_per_reclaim * mean_vcpu * rng.lognormvariate(-0.125, 0.5)
                vcpu = max(int(need), 1)
                demand = {"agg": agg, "need": vcpu, "victims": None, "when": when}
                if c.room_first:
                    self._book(agg, when, when + self._hold.expovariate(1.0 / c.guaranteed_hold_s), vcpu)
                if rng.random() < self._advise_p():
                    lead = min(max(c.advisory_median_s * math.exp(c.advisory_sigma * rng.gauss(0, 1)), 30.0),
                               HORIZON_S)
                    self._push(when - lead, "advise", demand)
                self._push(when, "reclaim", demand)
        hall_p = c.hall_reclaims_per_30d * dt / (30 * 86400.0)
        if rng.random() < hall_p:
            self._push(t + HORIZON_S, "hall", HALLS[rng.randrange(len(HALLS))])
        self._push(t + dt, "tick", None)

    def _book(self, agg: str, lands: float, leaves: float, vcpu: int) -> None:
        """Book a guaranteed request and schedule its landing (now, if it lands now) and its leaving."""
        self.demand.book(agg, lands, leaves, vcpu)
        if lands > self.now:
            self._push(lands, "held", (agg, vcpu))
        else:
            self._op_held((agg, vcpu))
        self._push(leaves, "held", (agg, -vcpu))

    def _op_held(self, arg: tuple[str, int]) -> None:
        """A booked request lands (+vCPU) or leaves (−vCPU): the room it holds now."""
        self.demand.held_now[arg[0]] += arg[1]

    def _short(self, agg: str, need: int, t: float) -> int:
        """vCPU a request must reclaim: what does not fit in free room (``room_first``), else all of it."""
        return min(need, self.overflow_vcpu(agg, t)) if self.config.room_first else need

    def _advise_p(self) -> float:
        """Chance a request gets an advisory. A forecast names victims only for what will not fit, and some
        are spared when the request lands, so the chance is steered by the running shortfall of advised
        victims against the configured share (one more sure advisory per 50 victims behind)."""
        if not self.config.room_first:
            return self._advisory_p  # every request reclaims: the configured chance gives the share
        behind = self._advisory_p * self._victim_total - self._advised_total
        return min(1.0, max(0.0, self._advisory_p + behind / 50.0))

    def _candidates(self, agg: str) -> list[Inst]:
        live = self.live
        return [inst for i in self.aggregates[agg] for inst in live[i].values() if not (inst.doomed or inst.reserved)]

    def _op_advise(self, demand: dict[str, Any]) -> None:
        # what will not fit when the request lands, as the calendar sees it now
        short = self._short(demand["agg"], demand["need"], demand["when"])
        if short <= 0:
            return
        victims = select_victims(self.config.strategy, self._candidates(demand["agg"]), short, self._victims)
        demand["victims"] = victims
        expected = self.at(demand["when"]).isoformat()
        for inst in victims:
            assert isinstance(inst, Inst)
            inst.advisory_at, inst.reserved = self.now, True
            for fn in self.on_advisory:
                fn(inst, self.now, demand["when"])
            self._emit(SimEvent(EventKind.ADVISORY, self.now, self.specs[inst.pool].pool.pool_id, inst.id,
                                "forecast-guaranteed-demand",
                                attributes={"aggregate": demand["agg"], "expected_at": expected}))

    def request_room(self, agg: str, vcpu: int, hold_s: float) -> list[Inst]:
        """A guaranteed request for ``vcpu`` landing on aggregate ``agg`` now, holding its room for ``hold_s``:
        it takes free room first and reclaims only what does not fit. Returns the instances it reclaimed."""
        if not self.config.room_first:
            raise ValueError("request_room needs room_first=True (guaranteed requests that take free room)")
        if agg not in self.aggregates:
            raise ValueError(f"aggregate {agg!r} is not a reclaimable aggregate of this region; "
                             f"use one of {sorted(self.aggregates)}")
        self._book(agg, self.now, self.now + hold_s, vcpu)
        return self._op_reclaim({"agg": agg, "need": vcpu, "victims": None, "when": self.now})

    def _op_reclaim(self, demand: dict[str, Any]) -> list[Inst]:
        agg = demand["agg"]
        chosen = [v for v in (demand["victims"] or []) if isinstance(v, Inst) and not v.doomed
                  and v.id in self.by_id]
        short = self._short(agg, demand["need"], self.now)  # the request has landed
        taken, freed = [], 0
        for v in chosen:  # advised victims first, as many as the request still needs
            if freed < short:
                taken.append(v)
                freed += v.vcpu
            else:  # the forecast overshot (others left in the meantime): a false-positive advisory
                v.reserved, v.advisory_at = False, None
        chosen = taken
        if freed < short:
            rest = self._candidates(agg)  # advised victims are reserved, so never among the candidates again
            chosen += [v for v in select_victims(self.config.strategy, rest, short - freed, self._victims)
                       if isinstance(v, Inst)]
        self._demands += 1
        self._victim_total += len(chosen)
        self._advised_total += sum(1 for v in chosen if v.advisory_at is not None)
        for inst in chosen:
            self.doom(inst, "reclaimed", drill=False)
        return chosen

    def _op_hall(self, hall: str) -> None:
        self.hall_reclaim(hall)

    def hall_reclaim(self, hall: str, *, drill: bool = False) -> list[Inst]:
        """Every reclaimable instance in the hall gets its notice now; the hall lends nothing for a while."""
        self.hall_down_until[hall] = self.now + self.config.hall_outage_s
        victims = [inst for i, s in enumerate(self.specs) if s.pool.hall == hall and self._reclaimable(i)
                   for inst in list(self.live[i].values()) if not inst.doomed]
        for inst in victims:
            self.doom(inst, "hall-reclaim", drill=drill)
        self.stats.hall_reclaimed += len(victims)
        return victims

    def doom(self, inst: Inst, cause: str, *, drill: bool, notice: bool | None = None) -> None:
        """Notice now and deletion after the notice window (or, for the no-notice share, deletion now)."""
        c = self.config
        if not inst.doomed and inst.id in self.by_id and self._reclaimable(inst.pool):
            self.live_vcpu[self.agg_of[inst.pool]] -= inst.vcpu
        inst.doomed, inst.cause, inst.drill = True, cause, drill
        if notice is None:
            notice = self._notice.random() >= c.no_notice_share
        pool = self.specs[inst.pool].pool
        if not drill and self._reclaimable(inst.pool):
            self.stats.reclaimed += 1
            self.pool_reclaims[inst.pool] += 1
            if inst.advisory_at is not None:
                self.stats.advised += 1
                self.stats.advisory_leads.append(self.now - inst.advisory_at)
            if not notice:
                self.stats.no_notice += 1
        owner = owner_of(inst)
        if not notice:  # the loss itself is the reclaim's start (contracts.subjects.is_reclaim); deleted at once
            inst.terminate_at = self.now
            self._emit(SimEvent(EventKind.NO_NOTICE_LOSS, self.now, pool.pool_id, inst.id, no_notice_cause(cause),
                                drill, *owner, attributes={"owned": inst.owned}))
            self._op_delete(inst.id)
            return
        inst.notice_at, inst.terminate_at = self.now, self.now + c.notice_s
        self.owned_changes += inst.owned
        for fn in self.on_notice:
            fn(inst)
        self._emit(SimEvent(EventKind.NOTICE, self.now, pool.pool_id, inst.id, cause, drill, *owner,
                            attributes={"terminate_at": self.at(inst.terminate_at).isoformat(),
                                        "advised": inst.advisory_at is not None}))
        self._push(inst.terminate_at, "delete", inst.id)

    def _op_delete(self, instance_id: str) -> None:
        inst = self.by_id.get(instance_id)
        if inst is None:
            return
        pool = self.specs[inst.pool].pool
        self.remove(inst)
        self._emit(terminated(inst, pool.pool_id, self.now))
        if not inst.owned and self.config.background and self._reclaimable(inst.pool):
            resume = max(self.now, self.hall_down_until[pool.hall])
            self._push(resume + self._refill.expovariate(1.0 / self.config.refill_mean_s), "refill", inst.pool)

    def _op_refill(self, i: int) -> None:
        spec = self.specs[i]
        if len(self.live[i]) < round(spec.slots * self.config.occupancy) and self.free(i) > 0:
            self.add(Inst(id=self.new_id(), pool=i, vcpu=spec.pool.vcpu, launched=self.now, owned=False))
        elif self.now < self.hall_down_until[spec.pool.hall]:
            self._push(self.hall_down_until[spec.pool.hall] + self._refill.expovariate(
                1.0 / self.config.refill_mean_s), "refill", i)
        else:
            self._push(self.now + self.config.refill_mean_s, "refill", i)

    def _rate_card(self) -> None:
        """Rows (pool index, utilisation, free instances, capacity) for every reclaimable pool."""
        rows: list[tuple[int, float, int, int]] = []
        t = self.now
        for agg, pools in self.aggregates.items():
            u_g = self.demand.utilisation(agg, t)
            used = self.used_vcpu[agg] + self.held_vcpu(agg, t)
            u = min(1.0, 0.7 * u_g + 0.3 * min(1.0, used / self.slot_vcpu[agg]))
            for i, cap in zip(pools, self.capacities(agg, t), strict=True):  # 0 while the hall is down
                rows.append((i, u, max(cap - len(self.live[i]), 0), cap))
        for fn in self.on_rate_card:
            fn(t, rows)

