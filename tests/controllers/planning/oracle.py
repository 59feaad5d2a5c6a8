"""The planner as it was before the per-plan tables (main at a9c10ad): the oracle of the equivalence tests.

Verbatim logic of ``controllers/planning/{floor,waterfill,planner}.py`` before issue 18, merged into one module;
the optimised planner must produce the same plans for the same inputs. Changed on purpose for issue 19, in
the incremental passes only: re-plans keep what a plan holds (``_replan``) and kept plans follow the room
(``plan``); plans from scratch are the planner's before issue 18, unchanged.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from contracts.pools import PurchaseModel
from contracts.schema import Contract, PlacementStrategy
from controllers.planning import Caps, Claim, PlannerConfig, PlanSet, PoolState, Strategy, WorkloadPlan, priority
from controllers.planning.model import Allocation, Purpose, units_per_instance
from controllers.planning.risk import weight_of


@dataclass(frozen=True)
class FloorCandidate:
    """A guaranteed pool that could hold floor units: its state, units per instance and units left."""

    state: PoolState
    per_instance: int
    capacity_units: int

    @property
    def committed(self) -> bool:
        """Whether the pool is the business unit's committed (reserved) capacity."""
        return self.state.pool.purchase_model is PurchaseModel.COMMITTED

    def preference(self) -> tuple[int, Decimal, str]:
        """Sort key: committed before on-demand, then cheapest rate per unit (EUR/h), then pool id."""
        return (0 if self.committed else 1, self.state.rate_eur_h / self.per_instance, self.state.pool_id)


def fill_floor(units: int, candidates: list[FloorCandidate], caps: Caps) -> tuple[dict[str, int], int, list[str]]:
    """Returns units per pool id, the shortfall and notes (e.g. a floor too small to spread)."""
    notes: list[str] = []
    if units <= 0:
        return {}, 0, notes
    halls = sorted({c.state.pool.hall for c in candidates if c.capacity_units > 0})
    hall_cap = max(1, math.floor(Decimal(units) * caps.floor_hall_share))
    if len(halls) < caps.floor_min_halls:
        notes.append(f"guaranteed capacity fitting this unit exists in {len(halls)} hall(s), fewer than "
                     f"{caps.floor_min_halls}; the floor is not spread")
        hall_cap = units
    elif units < caps.floor_min_halls:
        notes.append(f"a floor of {units} unit(s) cannot span {caps.floor_min_halls} halls")
    elif hall_cap * len(halls) < units:  # 4 or 7 units over 3 halls: no spread keeps every hall at 40 %
        hall_cap = -(-units // len(halls))
        notes.append(f"a floor of {units} unit(s) over {len(halls)} halls cannot keep every hall at "
                     f"{caps.floor_hall_share:.0%} or less: at most {hall_cap} a hall")
    ranked = sorted(candidates, key=FloorCandidate.preference)
    spread = _cheapest_spread(units, halls, hall_cap, ranked)
    if spread is not None:
        return spread, 0, notes
    placed: dict[str, int] = defaultdict(int)
    per_hall: dict[str, int] = defaultdict(int)
    remaining = units
    while remaining:
        open_halls = [h for h in halls if per_hall[h] < hall_cap and any(
            c.state.pool.hall == h and placed[c.state.pool_id] < c.capacity_units for c in ranked)]
        if not open_halls:
            break
        hall = min(open_halls, key=lambda h: (per_hall[h], h))
        pool = next(c for c in ranked if c.state.pool.hall == hall and placed[c.state.pool_id] < c.capacity_units)
        placed[pool.state.pool_id] += 1
        per_hall[hall] += 1
        remaining -= 1
    return dict(placed), remaining, notes


def _cheapest_spread(units: int, halls: list[str], hall_cap: int,
                     ranked: list[FloorCandidate]) -> dict[str, int] | None:
    """The floor when every hall's round-robin share fits one pool with room to spare: per hall, among the pools
    of the first purchase model with capacity, the one whose whole instances for the share cost least (ties: the
    preference order); None when a share passes the hall cap or the hall's first pool has no room to spare."""
    if not halls:
        return None
    each, more = divmod(units, len(halls))
    placed: dict[str, int] = {}
    for n, hall in enumerate(halls):
        share = each + 1 if n < more else each
        if share > hall_cap:
            return None
        mine = [c for c in ranked if c.state.pool.hall == hall and c.capacity_units > 0]
        if not mine:
            continue
        if share >= mine[0].capacity_units:
            return None
        fits = [c for c in mine if c.committed == mine[0].committed and share < c.capacity_units]
        best = min(fits, key=lambda c: c.state.rate_eur_h * math.ceil(share / c.per_instance))
        placed[best.state.pool_id] = share
    return placed



@dataclass(frozen=True)
class Candidate:
    """A reclaimable pool that could take units of one workload."""

    state: PoolState
    per_instance: int       # units one instance holds
    capacity_units: int     # residual available instances × per_instance

    @property
    def rate_per_unit(self) -> Decimal:
        """The pool's rate per workload unit (EUR/h)."""
        return self.state.rate_eur_h / self.per_instance


def order(candidates: list[Candidate], strategy: Strategy, pool_cap: int | None = None,
          weight: float = 0.0) -> list[Candidate]:
    """Order candidates for the water-fill under ``strategy`` (ties broken by rate, then pool id).

    With ``pool_cap`` (the most units one pool may take), a pool whose one instance holds more units than that
    comes after every pool whose instance fits: the cap leaves such an instance part-empty and its whole rate
    is paid for the units it holds (a 4-vCPU unit capped at 6 units a pool pays a 64-vCPU instance's 16). Rate
    per unit is then the rate of an instance over the units the cap lets it hold.
    """
    cap = pool_cap or 0

    def oversize(c: Candidate) -> bool:
        return cap > 0 and c.per_instance > cap

    def rate(c: Candidate) -> Decimal:
        return c.state.rate_eur_h / min(c.per_instance, cap) if cap else c.rate_per_unit

    if strategy is Strategy.EXPECTED_COST:  # rate + P(reclaim in 1 h) x the workload's hours at the guaranteed rate
        def cost(c: Candidate) -> float:
            g = c.state.pool.guaranteed_rate_eur_h
            per = float(c.state.rate_eur_h) + c.state.reclaim_p * weight * float(g if g is not None else
                                                                                c.state.rate_eur_h)
            return per / (min(c.per_instance, cap) if cap else c.per_instance)

        return sorted(candidates, key=lambda c: (oversize(c), cost(c), c.state.pool_id))
    if strategy is Strategy.DEPTH_FIRST:
        return sorted(candidates, key=lambda c: (oversize(c), -c.state.score, rate(c), c.state.pool_id))
    if strategy is Strategy.CAPACITY_OPTIMISED:
        return sorted(candidates, key=lambda c: (oversize(c), -c.capacity_units, rate(c), c.state.pool_id))
    return sorted(candidates, key=lambda c: (oversize(c), rate(c), -c.state.score, c.state.pool_id))


def _share(target: int, share: Decimal, at_least_one: bool) -> int:
    units = math.floor(Decimal(target) * share)
    return max(1, units) if at_least_one else units


def fill(target: int, candidates: list[Candidate], strategy: Strategy, caps: Caps,
         held: dict[str, int] | None = None, weight: float = 0.0) -> tuple[dict[str, int], int]:
    """Place ``target`` units; returns units per pool id and the shortfall.

    ``held`` (issue 19, a re-plan): units the plan holds per pool, kept first in rank order within the caps.
    Where the hall cap is only a preference (fewer halls than its share can cover), a third pass tops up
    without it.
    """
    if target <= 0:
        return {}, 0
    preference = False  # the hall cap is only a preference: a pass 3 without it tops up
    if strategy is Strategy.SINGLE_CHEAPEST:
        pool_cap, group_cap, min_pools, hall_cap = target, target, 1, target
    else:
        pool_cap = _share(target, caps.pool_share, True)
        group_cap = _share(target, caps.group_share, True)
        min_pools = caps.min_pools
        halls = {c.state.pool.hall for c in candidates if c.capacity_units > 0}
        spread = len(halls) >= max(2, caps.hall_min_halls)  # a small claim may still need ceil(target / halls)
        hall_cap = max(_share(target, caps.hall_share, True), -(-target // len(halls))) if spread else target
        preference = spread and hall_cap < target and len(halls) * caps.hall_share < 1
    ranked = order(candidates, strategy, pool_cap, weight)
    probation_cap = _share(target, caps.probation_share, False)
    placed: dict[str, int] = defaultdict(int)
    group_used: dict[str, int] = defaultdict(int)
    hall_used: dict[str, int] = defaultdict(int)
    remaining = target

    def room(c: Candidate) -> int:
        cap = probation_cap if c.state.probation else pool_cap
        return max(0, min(cap - placed[c.state.pool_id], group_cap - group_used[c.state.group_id],
                          hall_cap - hall_used[c.state.pool.hall], c.capacity_units - placed[c.state.pool_id]))

    def take(c: Candidate, units: int) -> None:
        nonlocal remaining
        placed[c.state.pool_id] += units
        group_used[c.state.group_id] += units
        hall_used[c.state.pool.hall] += units
        remaining -= units

    whole = strategy is Strategy.EXPECTED_COST  # whole instances first (issue 36)
    for c in ranked if held else ():
        had = held.get(c.state.pool_id, 0)  # type: ignore[union-attr]
        units = min(had, room(c), remaining)
        if whole and units < had and units > c.per_instance:  # cut: whole instances go
            units -= units % c.per_instance
        if units > 0:
            take(c, units)

    def rounded(c: Candidate, units: int) -> int:
        """Less what would leave the pool's last instance part-filled, unless it holds no whole one."""
        total, k = placed[c.state.pool_id] + units, c.per_instance
        return units if total <= k else total - total % k - placed[c.state.pool_id]

    # pass 1: in rank order, keeping one unit back for each further pool needed to reach min_pools
    for index, c in enumerate(ranked):
        if remaining == 0:
            break
        used = sum(1 for v in placed.values() if v)
        still_needed = max(0, min_pools - used - 1)
        reserve = min(still_needed, len(ranked) - index - 1, remaining - 1)
        units = min(room(c), remaining - reserve)
        if whole:
            units = rounded(c, units)
        if units > 0:
            take(c, units)
    # pass 2: top up to the caps in rank order; pass 3 (a preference): the same without the hall cap; whole
    # instances first, then part-filled ones
    first_hall_cap = hall_cap
    for whole_only in (True, False) if whole else (False,):
        hall_cap = first_hall_cap
        for lift in (False, True) if preference else (False,):
            if lift:
                hall_cap = target
            for c in ranked:
                if remaining == 0:
                    break
                units = min(room(c), remaining)
                if whole_only:
                    units = rounded(c, units)
                if units > 0:
                    take(c, units)
    return {k: v for k, v in placed.items() if v}, remaining




def _strategy(contract: Contract, config: PlannerConfig) -> Strategy:
    if config.strategy is not None:
        return config.strategy
    price_first = contract.placement_strategy is PlacementStrategy.PRICE_FIRST
    return Strategy.PRICE_FIRST if price_first else Strategy.EXPECTED_COST


def costed(target: int, candidates: list[Candidate], contract: Contract,
           caps: Caps) -> tuple[dict[str, int], int, list[str]]:
    """Expected cost, the rule in ``controllers/planning/costed.py`` written the oracle's way: the fill at the
    contract's weight of a reclaim, then at 4, 16 and 64 times it while its expected reclaims (%/h) exceed the
    contract's tolerance; none within it: the least reclaimed (the first of equals)."""
    p = {c.state.pool_id: c.state.reclaim_p for c in candidates}
    base = weight_of(contract)
    best: tuple[float, dict[str, int], int] | None = None
    for step in (1.0, 4.0, 16.0, 64.0):
        placed, short = fill(target, candidates, Strategy.EXPECTED_COST, caps, weight=base * step)
        units = sum(placed.values())
        rate = 100.0 * sum(n * p[pid] for pid, n in placed.items()) / units if units else 0.0
        if rate <= float(contract.max_interruption_rate_pct_h) or base <= 0:
            return placed, short, []
        if best is None or rate < best[0]:
            best = (rate, placed, short)
    assert best is not None
    note = (f"expected {best[0]:.2f} %/h reclaimed, above the contract's tolerance of "
            f"{contract.max_interruption_rate_pct_h:g} %/h: no placement within the caps found calmer")
    return best[1], best[2], [note]


def _reclaimable(contract: Contract, pools: Sequence[PoolState], residual: dict[str, int],
                 threshold: Decimal) -> list[Candidate]:
    out = []
    for s in pools:
        p = s.pool
        if (s.excluded or p.purchase_model is not PurchaseModel.RECLAIMABLE or p.region != contract.region
                or s.discount_ratio >= threshold or not p.fits(contract)):
            continue
        k = units_per_instance(p, contract)
        if k > 0 and residual.get(p.pool_id, 0) > 0:
            out.append(Candidate(s, k, residual[p.pool_id] * k))
    return out


def _guaranteed(contract: Contract, pools: Sequence[PoolState], residual: dict[str, int]) -> list[FloorCandidate]:
    out = []
    for s in pools:
        p = s.pool
        if s.excluded:
            continue
        committed_ours = p.purchase_model is PurchaseModel.COMMITTED and p.business_unit == contract.business_unit
        if not (committed_ours or p.purchase_model is PurchaseModel.GUARANTEED) or p.region != contract.region:
            continue
        k = units_per_instance(p, contract)
        if k > 0 and residual.get(p.pool_id, 0) > 0:
            out.append(FloorCandidate(s, k, residual[p.pool_id] * k))
    return out


def _allocations(placed: dict[str, int], per_instance: dict[str, int], rates: dict[str, Decimal],
                 purpose: Purpose) -> list[Allocation]:
    return [Allocation(pid, purpose, units, math.ceil(units / per_instance[pid]), rates[pid])
            for pid, units in sorted(placed.items())]


def _floor_wanted(claim: Claim) -> int:
    return math.ceil(claim.units * claim.contract.floor_pct / 100)


def _plan_one(claim: Claim, pools: Sequence[PoolState], residual: dict[str, int],
              config: PlannerConfig) -> WorkloadPlan:
    contract = claim.contract
    strategy = _strategy(contract, config)
    floor_units = _floor_wanted(claim)
    rates = {s.pool_id: s.rate_eur_h for s in pools}
    notes: list[str] = []

    guaranteed = _guaranteed(contract, pools, residual)
    floor_placed, floor_short, floor_notes = fill_floor(floor_units, guaranteed, config.caps)
    notes += floor_notes
    k_floor = {c.state.pool_id: c.per_instance for c in guaranteed}
    allocations = _allocations(floor_placed, k_floor, rates, Purpose.FLOOR)
    for a in allocations:
        residual[a.pool_id] -= a.instances

    target = claim.units - floor_units + floor_short  # floor shortfall is sought on reclaimable capacity
    candidates = _reclaimable(contract, pools, residual, config.discount_threshold)
    if len(candidates) < config.caps.min_pools and strategy is not Strategy.SINGLE_CHEAPEST:
        notes.append(f"only {len(candidates)} eligible pool(s) with capacity, fewer than {config.caps.min_pools}")
    if strategy is Strategy.EXPECTED_COST:
        placed, short, risky = costed(target, candidates, contract, config.caps)
        notes += risky
    else:
        placed, short = fill(target, candidates, strategy, config.caps)
    cheapest, _ = fill(target, candidates, Strategy.PRICE_FIRST if strategy is not Strategy.SINGLE_CHEAPEST
                       else Strategy.SINGLE_CHEAPEST, config.caps)
    k = {c.state.pool_id: c.per_instance for c in candidates}
    reclaim = _allocations(placed, k, rates, Purpose.RECLAIMABLE)
    for a in reclaim:
        residual[a.pool_id] -= a.instances
    cheapest_cost = sum((rates[pid] * math.ceil(u / k[pid]) for pid, u in cheapest.items()), Decimal(0))
    if short:
        notes.append(f"{short} unit(s) short: caps or capacity exhausted")
    return WorkloadPlan(
        workload=contract.workload, claim_digest=claim.digest, strategy=strategy,
        allocations=tuple(allocations + reclaim), wanted_units=claim.units, floor_units=floor_units - floor_short,
        shortfall_units=short, cheapest_cost_eur_h=cheapest_cost, notes=tuple(notes))


def _within_group_cap(prev: WorkloadPlan, groups: dict[str, str], caps: Caps, short: int = 0) -> bool:
    """The plan's reclaimable units per correlation group in force stay within the group cap (ADR-06)."""
    if prev.strategy is Strategy.SINGLE_CHEAPEST:
        return True
    per: dict[str, int] = {}
    for a in prev.allocations:
        if a.purpose is Purpose.RECLAIMABLE:
            group = groups.get(a.pool_id, a.pool_id)
            per[group] = per.get(group, 0) + a.units
    cap = max(1, math.floor(Decimal(sum(per.values()) + short) * caps.group_share))
    return all(units <= cap for units in per.values())


def plan(claims: Sequence[Claim], pools: Sequence[PoolState], now: datetime, previous: PlanSet | None = None,
         config: PlannerConfig | None = None) -> PlanSet:
    """Plan every claim; keep unchanged plans from ``previous``. Pure: reads nothing but its arguments."""
    config = config or PlannerConfig()
    residual = {s.pool_id: s.available_instances for s in pools}
    excluded = {s.pool_id for s in pools if s.excluded}
    known = set(residual)
    groups = {s.pool_id: s.group_id for s in pools}
    kept: dict[str, WorkloadPlan] = {}
    todo: list[Claim] = []
    old = previous.plans if previous else {}
    for claim in sorted(claims, key=lambda c: priority(c.contract)):
        prev = old.get(claim.workload)
        unchanged = (prev is not None and prev.claim_digest == claim.digest
                     and prev.strategy is _strategy(claim.contract, config))
        complete = prev is not None and prev.shortfall_units == 0 and prev.floor_units >= _floor_wanted(claim)
        if (prev is not None and unchanged and complete and not (prev.pools & excluded) and prev.pools <= known
                and _within_group_cap(prev, groups, config.caps)):
            kept[claim.workload] = prev
            for a in prev.allocations:
                residual[a.pool_id] -= a.instances
        else:
            todo.append(claim)
    by_name = {c.workload: c for c in claims}
    for name in reversed(list(kept)):  # issue 19: kept plans follow the room (the lowest priority re-planned)
        over = {pid for pid, n in residual.items() if n < 0}
        if not over:
            break
        if kept[name].pools & over:
            for a in kept.pop(name).allocations:
                residual[a.pool_id] += a.instances
            todo.append(by_name[name])
    todo.sort(key=lambda c: priority(c.contract))
    plans = dict(kept)
    for claim in todo:
        prev = old.get(claim.workload)
        if (prev is not None and prev.strategy is _strategy(claim.contract, config)
                and prev.claim_digest.rpartition(":")[0] == claim.contract.ref):
            new = _replan(prev, claim, pools, residual, config)
            plans[claim.workload] = prev if _same_placement(new, prev) else new
            for a in plans[claim.workload].allocations:
                residual[a.pool_id] -= a.instances
        else:
            plans[claim.workload] = _plan_one(claim, pools, residual, config)
    removed = set(old) - set(plans)
    replanned = tuple(c.workload for c in todo if plans[c.workload] is not old.get(c.workload))
    changed = bool(replanned or removed) or previous is None
    generation = (previous.generation if previous else 0) + (1 if changed else 0)
    return PlanSet(generation=generation, made_at=now, plans=plans, replanned=replanned)


def _same_placement(a: WorkloadPlan, b: WorkloadPlan) -> bool:
    def key(p: WorkloadPlan) -> tuple[object, ...]:
        return (p.claim_digest, p.strategy, p.floor_units, p.shortfall_units,
                [(x.pool_id, x.purpose, x.units, x.instances) for x in p.allocations])
    return key(a) == key(b)


def _replan(prev: WorkloadPlan, claim: Claim, pools: Sequence[PoolState], residual: dict[str, int],
            config: PlannerConfig) -> WorkloadPlan:
    """Issue 19's re-plan, which keeps what ``prev`` holds (the rule in ``controllers/planning/incremental.py``),
    written the oracle's way: the floor keeps its units in eligible pools with room, up to the floor wanted, and
    spreads only the missing ones; the reclaimable part keeps its units within the caps, then water-fills the
    rest. Does not take from ``residual`` (the caller takes the plan it keeps)."""
    contract = claim.contract
    strategy = _strategy(contract, config)
    floor_units = _floor_wanted(claim)
    rates = {s.pool_id: s.rate_eur_h for s in pools}
    guaranteed = {c.state.pool_id: c for c in _guaranteed(contract, pools, residual)}
    kept: dict[str, int] = {}
    left = floor_units
    for a in sorted(prev.allocations, key=lambda a: a.pool_id):
        if a.purpose is Purpose.FLOOR and a.pool_id in guaranteed and left > 0:
            kept[a.pool_id] = min(a.units, guaranteed[a.pool_id].capacity_units, left)
            left -= kept[a.pool_id]
    aside = dict(residual)
    for pid, n in kept.items():
        aside[pid] -= math.ceil(n / guaranteed[pid].per_instance)
    new, floor_short, notes = fill_floor(left, _guaranteed(contract, pools, aside), config.caps)
    for pid, n in new.items():
        kept[pid] = kept.get(pid, 0) + n
    k_floor = {pid: c.per_instance for pid, c in guaranteed.items()}
    floor = _allocations(kept, k_floor, rates, Purpose.FLOOR)
    work = dict(residual)
    for a in floor:
        work[a.pool_id] -= a.instances
    target = claim.units - floor_units + floor_short
    candidates = _reclaimable(contract, pools, work, config.discount_threshold)
    if len(candidates) < config.caps.min_pools and strategy is not Strategy.SINGLE_CHEAPEST:
        notes.append(f"only {len(candidates)} eligible pool(s) with capacity, fewer than {config.caps.min_pools}")
    held = {a.pool_id: a.units for a in prev.allocations if a.purpose is Purpose.RECLAIMABLE}
    placed, short = fill(target, candidates, strategy, config.caps, held=held,
                         weight=weight_of(contract) if strategy is Strategy.EXPECTED_COST else 0.0)
    shadow = Strategy.PRICE_FIRST if strategy is not Strategy.SINGLE_CHEAPEST else Strategy.SINGLE_CHEAPEST
    cheapest = placed if shadow is strategy else fill(target, candidates, shadow, config.caps)[0]
    k = {c.state.pool_id: c.per_instance for c in candidates}
    reclaim = _allocations(placed, k, rates, Purpose.RECLAIMABLE)
    cheapest_cost = sum((rates[pid] * math.ceil(u / k[pid]) for pid, u in cheapest.items()), Decimal(0))
    if short:
        notes.append(f"{short} unit(s) short: caps or capacity exhausted")
    return WorkloadPlan(
        workload=contract.workload, claim_digest=claim.digest, strategy=strategy,
        allocations=tuple(floor + reclaim), wanted_units=claim.units, floor_units=floor_units - floor_short,
        shortfall_units=short, cheapest_cost_eur_h=cheapest_cost, notes=tuple(notes))
