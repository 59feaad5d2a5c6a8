"""The replay simulator: virtual time over a reclaim trace with the real planner (ADR-03, ADR-08).

Every step (5 min) it ranks the pools from what the trace has shown so far (observed reclaim rate over a
trailing window, capacity left, price), excludes a pool after three waves in 30 min for 2 h (ADR-07), plans
with the real incremental planner, launches what the plan says, then applies the trace's reclaims: each of our
instances in a reclaimed pool is lost with the wave's probability, the work it loses depends on its contract
(final checkpoint on notice, periodic interval, requeue unit), and the pool lends less while the guaranteed
tenant holds the room. A workload short of its claim for 5 min falls back to guaranteed capacity within its
24 h spend cap, and returns 20 % an hour after 60 min without shortfall (ADR-23, ADR-24). Money is accrued
per step into a ledger in the terms of ADR-26: useful unit-hours at the guaranteed rate minus every cost.
Deterministic for a given trace, claims and seed.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal

from contracts.pools import Pool
from contracts.rules import derived_interval_min
from contracts.schema import CheckpointMode, Contract, FallbackPolicy, Framework
from contracts.settings import CompilerSettings

from ..planning import Caps, Claim, PlannerConfig, PlanSet, PoolState, Purpose, Strategy, composite_score, plan
from ..planning.model import units_per_instance
from .trace import Reclaim, Trace

__all__ = ["PoolHistory", "ReplayConfig", "StepLoss", "WorkloadOutcome", "guaranteed_rate_per_unit", "replay"]


@dataclass(frozen=True)
class ReplayConfig:
    strategy: Strategy | None = None           # None: each contract's own
    step: timedelta = timedelta(minutes=5)
    rank_window: timedelta = timedelta(days=7)
    exclusion_waves: int = 3
    exclusion_window: timedelta = timedelta(minutes=30)
    exclusion_cooloff: timedelta = timedelta(hours=2)
    fallback_after: timedelta = timedelta(minutes=5)
    return_after: timedelta = timedelta(minutes=60)
    return_share_per_h: float = 0.20
    caps: Caps = field(default_factory=Caps)


@dataclass(frozen=True)
class StepLoss:
    """One workload's worst 5-min step, to trace it: when the step began, the reclaimable units lost in it per
    pool, and the reclaimable units the workload held per pool at the pass before the step's first loss."""

    at: datetime
    lost: dict[str, int]
    held: dict[str, int]

    @property
    def units_lost(self) -> int:
        """Units lost in the step, over every pool."""
        return sum(self.lost.values())


@dataclass
class WorkloadOutcome:
    """Per-workload results. Time-weighted quantities accumulate as exact integers of (unit- or instance-)
    seconds; the ``*_hours`` properties divide by 3600."""

    workload: str
    tier: str
    units: int
    instance_s: int = 0                   # reclaimable instance-seconds held
    wanted_s: int = 0
    delivered_s: int = 0
    wasted_s: int = 0
    reclaimable_s: int = 0                # unit-seconds delivered on reclaimable capacity
    fallback_s: int = 0
    shortfall_s: int = 0
    interruptions: int = 0                # instances lost to reclaims
    worst_step_loss_units: int = 0        # most reclaimable units lost in one step (what the caps bound)
    no_notice_losses: int = 0
    fallback_starts: int = 0
    reclaimable_cost: Decimal = Decimal(0)
    reclaimable_cost_planning: Decimal = Decimal(0)  # the same instance-hours at the catalogue's planning rate
    # the part of it held beyond the plan's instances (make-before-break overlap, surplus not yet terminated): the
    # replay through the controller counts it; the replay-only model holds no surplus
    surplus_cost_planning: Decimal = Decimal(0)
    floor_cost: Decimal = Decimal(0)
    fallback_cost: Decimal = Decimal(0)
    depth_premium: Decimal = Decimal(0)
    guaranteed_rate_per_unit: Decimal = Decimal(0)
    worst_step: StepLoss | None = None    # the worst step's detail (the replay through the controller records it)

    instance_hours = property(lambda self: self.instance_s / 3600)
    unit_hours_wanted = property(lambda self: self.wanted_s / 3600)
    unit_hours_delivered = property(lambda self: self.delivered_s / 3600)
    wasted_unit_hours = property(lambda self: self.wasted_s / 3600)
    reclaimable_unit_hours = property(lambda self: self.reclaimable_s / 3600)
    fallback_unit_hours = property(lambda self: self.fallback_s / 3600)
    shortfall_unit_hours = property(lambda self: self.shortfall_s / 3600)

    @property
    def interruption_rate_pct_h(self) -> float:
        """Interruptions per 100 instance-hours."""
        return 100.0 * self.interruptions * 3600 / self.instance_s if self.instance_s else 0.0

    @property
    def wasted_pct(self) -> float:
        """Wasted seconds as a share of the seconds on reclaimable capacity, in %."""
        return 100.0 * self.wasted_s / self.reclaimable_s if self.reclaimable_s else 0.0

    @property
    def useful_unit_seconds(self) -> int:
        """Unit-seconds delivered less those wasted."""
        return max(0, self.delivered_s - self.wasted_s)

    @property
    def counterfactual(self) -> Decimal:
        """Useful work valued at the guaranteed rate (ADR-26)."""
        return (Decimal(self.useful_unit_seconds) / 3600 * self.guaranteed_rate_per_unit).quantize(Decimal("0.01"))

    @property
    def cost(self) -> Decimal:
        """Reclaimable, floor and fallback cost, to the cent."""
        return (self.reclaimable_cost + self.floor_cost + self.fallback_cost).quantize(Decimal("0.01"))

    @property
    def net_saving(self) -> Decimal:
        """Counterfactual less cost."""
        return self.counterfactual - self.cost

    @property
    def net_saving_planning(self) -> Decimal:
        """Net saving with reclaimable hours priced at the catalogue's planning rate instead of the rate card
        (the region's catalogue: 35 % of the guaranteed rate, the one-pager's planning assumption)."""
        spend = self.reclaimable_cost_planning + self.floor_cost + self.fallback_cost
        return self.counterfactual - spend.quantize(Decimal("0.01"))


def _loss_hours(contract: Contract, noticed: bool, interval_min: int | None) -> float:
    """Work a lost instance must redo, per unit, in hours."""
    mode = contract.checkpoint_mode
    final = mode is CheckpointMode.FINAL_ON_NOTICE_AND_PERIODIC or (
        mode is CheckpointMode.FRAMEWORK and contract.framework is not Framework.SLURM_REQUEUE)
    if final and noticed:
        return 0.0
    if mode is not CheckpointMode.NONE and contract.framework is not Framework.SLURM_REQUEUE:
        return (interval_min or 60) / 60 / 2
    if contract.max_unit_length_min:
        return contract.max_unit_length_min / 60 / 2
    return 0.0  # stateless: capacity is lost until replaced, no work is redone


def guaranteed_rate_per_unit(contract: Contract, pools: Sequence[Pool]) -> Decimal:
    """The cheapest guaranteed price of one unit: every pool carries the guaranteed rate of its flavour."""
    rates = [p.guaranteed_rate_eur_h / k for p in pools if p.region == contract.region
             and p.fits(contract) and (k := units_per_instance(p, contract)) > 0]
    return min(rates) if rates else Decimal(0)


class PoolHistory:
    """What the trace has shown about each pool up to now: waves, held capacity, exclusions."""

    def __init__(self, trace: Trace, config: ReplayConfig) -> None:
        self.trace, self.config = trace, config
        self.waves: dict[str, deque[tuple[datetime, float]]] = defaultdict(deque)
        self.held: list[tuple[datetime, str, int]] = []  # (until, pool, instances held by the guaranteed tenant)
        self.window_sum: dict[str, float] = defaultdict(float)
        self.recent: dict[str, deque[datetime]] = defaultdict(deque)
        self.excluded_until: dict[str, datetime] = {}
        self.cooloff: dict[str, timedelta] = {}
        self.rates: dict[str, Decimal] = {p.pool_id: p.rate_eur_h for p in trace.pools}
        self.forward_now: dict[str, tuple[float, float]] = {}
        self._cards = deque(trace.rate_cards)
        self._forward = deque(trace.forward)
        self._free = deque(trace.free)
        self.free_now: dict[str, int] | None = None
        self._constants = [(p, p.pool_id, trace.capacity.get(p.pool_id, 0), float(p.guaranteed_rate_eur_h))
                           for p in trace.pools]

    def _advance_feeds(self, now: datetime) -> None:
        """The rate card and the forward-capacity calendar in force at ``now``."""
        while self._cards and self._cards[0][0] <= now:
            self.rates.update(self._cards.popleft()[1])
        while self._forward and self._forward[0][0] <= now:
            self.forward_now = self._forward.popleft()[1]
        while self._free and self._free[0][0] <= now:
            self.free_now = self._free.popleft()[1]

    def record(self, r: Reclaim, ours: bool = True) -> None:
        """A wave: it always feeds the observed rate; it counts towards exclusion only when it hit our
        instances (``ours``), the only waves the exclusion watcher sees on our lifecycle stream."""
        cap = self.trace.capacity.get(r.pool_id, 0)
        self.held.append((r.time + r.hold, r.pool_id, math.ceil(cap * r.share)))
        if r.drill:
            return  # drills are excluded from scoring (ADR-33)
        self.waves[r.pool_id].append((r.time, r.share))
        self.window_sum[r.pool_id] += r.share
        if not ours:
            return
        recent = self.recent[r.pool_id]
        recent.append(r.time)
        while recent and r.time - recent[0] > self.config.exclusion_window:
            recent.popleft()
        if len(recent) >= self.config.exclusion_waves and self.excluded_until.get(r.pool_id, r.time) <= r.time:
            length = self.cooloff.get(r.pool_id, self.config.exclusion_cooloff / 2) * 2
            self.cooloff[r.pool_id] = length
            self.excluded_until[r.pool_id] = r.time + length
            recent.clear()

    def states(self, now: datetime) -> list[PoolState]:
        """Every pool's state at ``now``, less what the replay holds."""
        self.held = [h for h in self.held if h[0] > now]
        taken: dict[str, int] = defaultdict(int)
        for _, pid, n in self.held:
            taken[pid] += n
        self._advance_feeds(now)
        window = self.config.rank_window
        window_h = window.total_seconds() / 3600
        free_now, forward_now, rates, window_sum = self.free_now, self.forward_now, self.rates, self.window_sum
        out = []
        for p, pid, cap, guaranteed in self._constants:
            waves = self.waves[pid]
            while waves and now - waves[0][0] > window:
                window_sum[pid] -= waves.popleft()[1]
            observed_pct_h = 100.0 * max(0.0, window_sum[pid]) / window_h
            free = max(0, cap - taken[pid])
            if free_now is not None and pid in free_now:
                free = min(cap, free_now[pid])  # the region's own figure, when the trace has it
            share_now = free / cap if cap else 0.0
            forward_share, forward_pct_h = forward_now.get(pid, (share_now, observed_pct_h))
            rate = rates[pid]
            ratio = float(rate) / guaranteed if guaranteed else 1.0
            # ADR-07/08: forward capacity and interruption (observed, and forecast by the calendar) outweigh rate
            score = composite_score(min(share_now, forward_share), (observed_pct_h + forward_pct_h) / 2, ratio)
            excluded = self.excluded_until.get(pid, now) > now
            out.append(PoolState(p, free, score=score, excluded=excluded,
                                 rate_override=None if rate == p.rate_eur_h else rate))
        return out


@dataclass
class _Held:
    reclaimable: dict[str, int] = field(default_factory=dict)   # pool -> instances
    units: dict[str, int] = field(default_factory=dict)         # pool -> reclaimable units they hold
    floor: dict[str, int] = field(default_factory=dict)
    fallback_units: int = 0
    short_since: datetime | None = None
    healthy_since: datetime | None = None
    return_base: int = 0
    last_return: datetime | None = None
    spend_24h: deque[tuple[datetime, Decimal]] = field(default_factory=deque)


def replay(trace: Trace, contracts: Iterable[Contract], units: dict[str, int] | int = 40,
           config: ReplayConfig | None = None,
           progress: Callable[[float], None] | None = None) -> dict[str, WorkloadOutcome]:
    """Replay ``trace`` for the contracts' workloads, each claiming ``units`` (per workload or for all)."""
    config = config or ReplayConfig()
    settings = CompilerSettings()
    rng = random.Random(trace.seed)
    contracts = sorted(contracts, key=lambda c: c.workload)
    by_name = {c.workload: c for c in contracts}
    want = {c.workload: (units if isinstance(units, int) else units.get(c.workload, 0)) for c in contracts}
    claims = [Claim(c, want[c.workload]) for c in contracts if want[c.workload] > 0]
    pools = PoolHistory(trace, config)
    pool_by_id = {p.pool_id: p for p in trace.pools}
    outcome = {c.workload: WorkloadOutcome(c.workload, str(c.tier), want[c.workload],
                                           guaranteed_rate_per_unit=guaranteed_rate_per_unit(c, trace.pools))
               for c in contracts}
    held = {c.workload: _Held() for c in contracts}
    planner = PlannerConfig(caps=config.caps, strategy=config.strategy)
    previous: PlanSet | None = None
    lost_last_step: set[str] = set()
    pending = deque(trace.reclaims)
    while pending and pending[0].time < trace.start:  # warm-up history feeds the rankings only
        pools.record(pending.popleft())
    step_s = int(config.step.total_seconds())
    total_s = (trace.end - trace.start).total_seconds()
    now = trace.start
    while now < trace.end:
        if progress is not None and now.minute == 0 and now.hour % 6 == 0:
            progress((now - trace.start).total_seconds() / total_s)
        states = pools.states(now)
        if previous is not None and lost_last_step:
            previous = replace(previous, plans={k: v for k, v in previous.plans.items() if k not in lost_last_step})
        current = plan(claims, states, now, previous, planner)
        previous = current
        _hold(current, held)
        lost_last_step = set()
        lost_units: dict[str, int] = defaultdict(int)
        step_end = now + config.step
        while pending and pending[0].time < step_end:
            r = pending.popleft()
            if r.drill:
                pools.record(r, ours=False)
                continue
            hit = _take_losses(r, held, by_name, pool_by_id, outcome, rng, settings, lost_units)
            lost_last_step |= hit
            pools.record(r, ours=bool(hit))  # the watcher sees a wave only when it took our instances
        for name, units_lost in lost_units.items():
            o = outcome[name]
            o.worst_step_loss_units = max(o.worst_step_loss_units, min(units_lost, want[name]))
        for name, h in held.items():
            _accrue(outcome[name], h, by_name[name], pool_by_id, pools.rates, want[name], now, step_s, config, current)
        now = step_end
    return outcome


def _hold(current: PlanSet, held: dict[str, _Held]) -> None:
    """What each workload holds after this step's plan: instances and units per reclaimable pool, floor."""
    for name, wp in current.plans.items():
        h = held[name]
        h.reclaimable = {a.pool_id: a.instances for a in wp.allocations if a.purpose is Purpose.RECLAIMABLE}
        h.units = {a.pool_id: a.units for a in wp.allocations if a.purpose is Purpose.RECLAIMABLE}
        h.floor = {a.pool_id: a.instances for a in wp.allocations if a.purpose is Purpose.FLOOR}


def _take_losses(r: Reclaim, held: dict[str, _Held], by_name: dict[str, Contract], pools: dict[str, Pool],
                 outcome: dict[str, WorkloadOutcome], rng: random.Random, settings: CompilerSettings,
                 lost_units: dict[str, int]) -> set[str]:
    """One reclaim wave on what the workloads hold in its pool: each instance lost with the wave's share, each
    loss without notice with its share; interruptions and wasted work charged. The workloads it hit."""
    hit: set[str] = set()
    for name, h in held.items():
        n = h.reclaimable.get(r.pool_id, 0)
        if not n:
            continue
        lost = sum(1 for _ in range(n) if rng.random() < r.share)
        if not lost:
            continue
        c = by_name[name]
        no_notice = sum(1 for _ in range(lost) if rng.random() < r.no_notice_share)
        # an instance holds k units, the last of a partly filled allocation fewer: a loss takes at most the units
        # the workload has in the pool
        k = units_per_instance(pools[r.pool_id], c)
        held_units = h.units.get(r.pool_id, n * k)
        gone = min(held_units, lost * k)
        per_instance = gone / lost
        interval = c.checkpoint_interval_min or derived_interval_min(c, settings)
        o = outcome[name]
        o.interruptions += lost
        o.no_notice_losses += no_notice
        o.wasted_s += round(3600 * per_instance * (no_notice * _loss_hours(c, False, interval)
                                                   + (lost - no_notice) * _loss_hours(c, True, interval)))
        h.reclaimable[r.pool_id] = n - lost
        h.units[r.pool_id] = held_units - gone
        lost_units[name] += gone
        hit.add(name)
    return hit


def _accrue(o: WorkloadOutcome, h: _Held, c: Contract, pools: dict[str, Pool], rates: dict[str, Decimal],
            wanted: int, now: datetime, step_s: int, config: ReplayConfig, current: PlanSet) -> None:
    step_h = Decimal(step_s) / 3600
    rec_units = sum(min(h.units.get(p, n * units_per_instance(pools[p], c)), n * units_per_instance(pools[p], c))
                    for p, n in h.reclaimable.items())
    floor_units = sum(n * units_per_instance(pools[p], c) for p, n in h.floor.items())
    o.instance_s += sum(h.reclaimable.values()) * step_s
    o.reclaimable_s += min(rec_units, wanted) * step_s
    o.reclaimable_cost += sum((rates[p] * n for p, n in h.reclaimable.items()), Decimal(0)) * step_h
    planned = sum((pools[p].rate_eur_h * n for p, n in h.reclaimable.items()), Decimal(0))
    o.reclaimable_cost_planning += planned * step_h
    o.floor_cost += sum((rates[p] * n for p, n in h.floor.items()), Decimal(0)) * step_h
    wp = current.plans.get(c.workload)
    if wp is not None:
        o.depth_premium += wp.depth_premium_eur_h * step_h
    base = rec_units + floor_units
    gap = max(0, wanted - base)
    unit_cost = o.guaranteed_rate_per_unit * step_h
    while h.spend_24h and now - h.spend_24h[0][0] >= timedelta(hours=24):
        h.spend_24h.popleft()
    spent = sum((v for _, v in h.spend_24h), Decimal(0))
    affordable = int((c.spend_cap_24h_eur - spent) / unit_cost) if unit_cost > 0 else 0
    if gap and c.fallback_policy is not FallbackPolicy.NONE:
        # fallback (ADR-23): after 5 min of shortfall, and only what the 24 h cap still covers
        h.short_since = h.short_since or now
        h.healthy_since, h.return_base, h.last_return = None, 0, None
        if now - h.short_since >= config.fallback_after:
            target = min(gap, affordable)
            if target > h.fallback_units:
                o.fallback_starts += 1 if h.fallback_units == 0 else 0
            h.fallback_units = target
    else:
        h.short_since = None
        if h.fallback_units:
            # return (ADR-24): after 60 min healthy, 20 % of the fallback capacity an hour
            h.healthy_since = h.healthy_since or now
            h.return_base = h.return_base or h.fallback_units
            due = h.last_return is None or now - h.last_return >= timedelta(hours=1)
            if now - h.healthy_since >= config.return_after and due:
                back = max(1, math.ceil(h.return_base * config.return_share_per_h))
                h.fallback_units = max(0, h.fallback_units - back)
                h.last_return = now
        h.fallback_units = min(h.fallback_units, affordable)  # nothing beyond the cap, ever
    if h.fallback_units:
        cost = unit_cost * h.fallback_units
        o.fallback_cost += cost
        o.fallback_s += h.fallback_units * step_s
        h.spend_24h.append((now, cost))
    o.wanted_s += wanted * step_s
    o.delivered_s += min(wanted, base + h.fallback_units) * step_s
    o.shortfall_s += max(0, wanted - base - h.fallback_units) * step_s
