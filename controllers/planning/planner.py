"""The planner: a pure function from claims, pools in force and the previous plan to the next plan (ADR-08).

Per workload, in priority order (floor-bearing tiers first, then deadlines), it fills the floor from
guaranteed capacity (``floor.fill_floor``), then water-fills the reclaimable rest under the caps
(``waterfill.fill``), and records the depth premium against the price-first placement under the same caps and
the same residual capacity. Incremental: a workload whose claim is unchanged, whose plan placed all of it, none
of whose pools is now excluded and whose reclaimable units still respect the group cap under the groups in force
(a merged group, ADR-06) keeps its plan; only the others are re-planned, on the capacity the kept plans leave. A
plan that left units short is re-planned every pass, so capacity that comes back is used (a kept short plan was
the source of most of the replay's shortfall, issue 19).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from contracts.schema import Contract, PlacementStrategy, TierName

from .floor import fill_floor
from .model import Allocation, Caps, Claim, PlanSet, PoolState, Purpose, Strategy, WorkloadPlan
from .tables import PoolTable, Shape
from .waterfill import fill

__all__ = ["PlannerConfig", "plan", "priority"]

_TIER_ORDER = {TierName.T1: 0, TierName.T4: 1, TierName.T2: 2, TierName.T3: 3, TierName.T5: 4}


@dataclass(frozen=True)
class PlannerConfig:
    """Planner settings: the caps, the discount threshold, and a strategy that overrides the contracts'."""

    caps: Caps = field(default_factory=Caps)
    discount_threshold: Decimal = Decimal("0.85")
    strategy: Strategy | None = None  # None: each contract's own (depth-first; T5 price-first)


def priority(contract: Contract) -> tuple[int, int, str]:
    """Planning order: base tier (T1, T4, T2, T3, T5, then any other), deadlines first, then workload name."""
    return (_TIER_ORDER.get(contract.base_tier, 5), 0 if contract.deadline else 1, contract.workload)


def _strategy(contract: Contract, config: PlannerConfig) -> Strategy:
    if config.strategy is not None:
        return config.strategy
    price_first = contract.placement_strategy is PlacementStrategy.PRICE_FIRST
    return Strategy.PRICE_FIRST if price_first else Strategy.DEPTH_FIRST


def _allocations(placed: dict[int, int], shape: Shape, table: PoolTable, purpose: Purpose) -> list[Allocation]:
    k, ids, rate = shape.k, table.ids, table.rate
    return [Allocation(ids[i], purpose, units, math.ceil(units / k[i]), rate[i])
            for i, units in sorted(placed.items(), key=lambda item: ids[item[0]])]


def _floor_wanted(claim: Claim) -> int:
    return math.ceil(claim.units * claim.contract.floor_pct / 100)


def _plan_one(claim: Claim, table: PoolTable, config: PlannerConfig) -> WorkloadPlan:
    contract = claim.contract
    strategy = _strategy(contract, config)
    floor_units = _floor_wanted(claim)
    notes: list[str] = []

    guaranteed = table.guaranteed(contract)
    floor_placed, floor_short, floor_notes = fill_floor(floor_units, guaranteed, config.caps, table)
    notes += floor_notes
    allocations = _allocations(floor_placed, guaranteed, table, Purpose.FLOOR)
    for i, a in zip(sorted(floor_placed, key=table.ids.__getitem__), allocations, strict=True):
        table.take(i, a.instances)

    target = claim.units - floor_units + floor_short  # floor shortfall is sought on reclaimable capacity
    shape = table.reclaimable(contract)
    if shape.live < config.caps.min_pools and strategy is not Strategy.SINGLE_CHEAPEST:
        notes.append(f"only {shape.live} eligible pool(s) with capacity, fewer than {config.caps.min_pools}")
    placed, short = fill(target, shape, strategy, config.caps, table)
    shadow = Strategy.PRICE_FIRST if strategy is not Strategy.SINGLE_CHEAPEST else Strategy.SINGLE_CHEAPEST
    cheapest = placed if shadow is strategy else fill(target, shape, shadow, config.caps, table)[0]
    k = shape.k
    reclaim = _allocations(placed, shape, table, Purpose.RECLAIMABLE)
    cheapest_cost = sum((table.rate[i] * math.ceil(u / k[i]) for i, u in cheapest.items()), Decimal(0))
    for i, a in zip(sorted(placed, key=table.ids.__getitem__), reclaim, strict=True):
        table.take(i, a.instances)
    if short:
        notes.append(f"{short} unit(s) short: caps or capacity exhausted")
    return WorkloadPlan(
        workload=contract.workload, claim_digest=claim.digest, strategy=strategy,
        allocations=tuple(allocations + reclaim), wanted_units=claim.units, floor_units=floor_units - floor_short,
        shortfall_units=short, cheapest_cost_eur_h=cheapest_cost, notes=tuple(notes))


def _within_group_cap(prev: WorkloadPlan, groups: dict[str, str], caps: Caps) -> bool:
    """The plan's reclaimable units per correlation group in force stay within the group cap (ADR-06)."""
    if prev.strategy is Strategy.SINGLE_CHEAPEST:
        return True
    per: dict[str, int] = {}
    for a in prev.allocations:
        if a.purpose is Purpose.RECLAIMABLE:
            group = groups.get(a.pool_id, a.pool_id)
            per[group] = per.get(group, 0) + a.units
    cap = max(1, math.floor(Decimal(sum(per.values())) * caps.group_share))
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
    plans = dict(kept)
    table = PoolTable(pools, residual, config.discount_threshold)
    for claim in todo:
        plans[claim.workload] = _plan_one(claim, table, config)
    removed = set(old) - set(plans)
    changed = bool(todo or removed) or previous is None
    generation = (previous.generation if previous else 0) + (1 if changed else 0)
    return PlanSet(generation=generation, made_at=now, plans=plans, replanned=tuple(c.workload for c in todo))
