"""Water-filling under caps (ADR-08): the reclaimable part of one workload's claim.

Candidates are ordered by the strategy; each pool takes up to its cap (15 % of the workload's reclaimable
units, 5 % on probation), each correlation group up to 30 %, each hall up to 40 % when the pools span three
halls or more (a hall is a correlation group beside its aggregates, ADR-06), and the fill keeps back one unit
for every pool still needed to reach eight pools, so a deep pool never crowds out the spread. A second pass tops
up to the caps when later pools could not take their share; what still cannot be placed is shortfall.

Pools whose one instance holds more units than the pool cap come last (``order``): the cap would leave such an
instance part-empty at its full rate.

Small claims: a share cap never rounds below one unit (a 4-unit claim puts one unit in each of four pools),
except probation, which may round to zero.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from .model import Caps, PoolState, Strategy

__all__ = ["Candidate", "fill", "order"]


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


def order(candidates: list[Candidate], strategy: Strategy, pool_cap: int | None = None) -> list[Candidate]:
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

    if strategy is Strategy.DEPTH_FIRST:
        return sorted(candidates, key=lambda c: (oversize(c), -c.state.score, rate(c), c.state.pool_id))
    if strategy is Strategy.CAPACITY_OPTIMISED:
        return sorted(candidates, key=lambda c: (oversize(c), -c.capacity_units, rate(c), c.state.pool_id))
    return sorted(candidates, key=lambda c: (oversize(c), rate(c), -c.state.score, c.state.pool_id))


def _share(target: int, share: Decimal, at_least_one: bool) -> int:
    units = math.floor(Decimal(target) * share)
    return max(1, units) if at_least_one else units


def fill(target: int, candidates: list[Candidate], strategy: Strategy, caps: Caps) -> tuple[dict[str, int], int]:
    """Place ``target`` units; returns units per pool id and the shortfall."""
    if target <= 0:
        return {}, 0
    if strategy is Strategy.SINGLE_CHEAPEST:
        pool_cap, group_cap, min_pools, hall_cap = target, target, 1, target
    else:
        pool_cap = _share(target, caps.pool_share, True)
        group_cap = _share(target, caps.group_share, True)
        min_pools = caps.min_pools
        halls = {c.state.pool.hall for c in candidates if c.capacity_units > 0}
        spread = len(halls) >= caps.floor_min_halls  # a small claim may still need ceil(target / halls) per hall
        hall_cap = max(_share(target, caps.hall_share, True), -(-target // len(halls))) if spread else target
    ranked = order(candidates, strategy, pool_cap)
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

    # pass 1: in rank order, keeping one unit back for each further pool needed to reach min_pools
    for index, c in enumerate(ranked):
        if remaining == 0:
            break
        used = sum(1 for v in placed.values() if v)
        still_needed = max(0, min_pools - used - 1)
        reserve = min(still_needed, len(ranked) - index - 1, remaining - 1)
        units = min(room(c), remaining - reserve)
        if units > 0:
            take(c, units)
    # pass 2: top up to the caps in rank order
    for c in ranked:
        if remaining == 0:
            break
        units = min(room(c), remaining)
        if units > 0:
            take(c, units)
    return {k: v for k, v in placed.items() if v}, remaining
