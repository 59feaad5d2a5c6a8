"""A re-plan that keeps what a plan holds and moves only what it must.

A workload is re-planned when its claim changed, its plan is short, a pool it uses was excluded or regrouped, or
a pool holds less room than its plan wants there. Made again from scratch on the ranking in force, the plan
moved every instance it held whenever the ranking had moved — the replay through the controller showed re-plans
turning half a partition into surplus at once, which the breaker took for a mass termination.

So a re-plan of a plan made for the same contract and strategy starts from what the plan holds:

- the floor keeps its units in guaranteed pools still eligible and with room, up to the floor wanted; only the
  missing floor units are placed (``floor.fill_floor``, spread over the halls where room is left once the kept
  instances are set aside);
- the reclaimable part keeps its units in pools still eligible (not excluded, discount, fitting the unit) with
  room, walking them in the strategy's order, within the pool, probation, group and hall caps on the target
  given what is already kept, and never more than the target;
- the missing units are then placed by the strategy's water-fill order (pass 1 keeping one unit back for each
  pool still needed to reach the spread, pass 2 topping up to the caps), counting the kept units in the caps.

Surplus arises only from an excluded or no-longer-eligible pool, a cap violation, room that is gone, or a lowered
claim. A kept unit is never moved because the ranking moved: ADR-08 and ADR-09 state no rule for when moving a
placement to a better-ranked pool is worth its interruptions, so none is moved (the caps and the room are the
only reasons). The depth premium is recorded against price-first on the same residual capacity, as for a plan
from scratch. The pure planner calls ``replan``; nothing here reads anything but its arguments.
"""

from __future__ import annotations

import math
from collections import defaultdict
from decimal import Decimal

from contracts.schema import Contract

from .floor import fill_floor
from .model import Allocation, Caps, Claim, Purpose, Strategy, WorkloadPlan
from .risk import weight_of
from .tables import Entry, PoolTable, Shape
from .waterfill import _key, _share, _whole, fill, whole_instances

__all__ = ["replan", "same_placement"]


def _order(table: PoolTable, shape: Shape, live: list[Entry], strategy: Strategy, cap: int) -> list[Entry]:
    """``live`` in the water-fill's order for ``strategy`` (oversize instances last; ties by rate, pool id).

    Depth-first and price-first take the shape's rank order (built once per pool states, ``tables``) for the
    pools whose instance fits the cap, where it is the same order, and sort only the oversize ones.
    """
    residual = table.residual
    key = _key(table, strategy, cap, shape.weight)
    if strategy not in (Strategy.DEPTH_FIRST, Strategy.PRICE_FIRST) or cap <= 0:
        return sorted(live, key=key)
    ranked = table.order(shape, strategy is Strategy.PRICE_FIRST).entries
    fitting = [e for e in ranked if e[1] <= cap and residual[e[0]] > 0]
    return fitting + sorted((e for e in live if e[1] > cap), key=key)


class _Fill:
    """One workload's reclaimable units under the caps on ``target``, starting from what its plan holds."""

    def __init__(self, target: int, shape: Shape, strategy: Strategy, caps: Caps, table: PoolTable) -> None:
        live = [e for e in shape.entries if table.residual[e[0]] > 0]
        self.preference = False  # the hall cap is only a preference (``Caps.hall_cap``)
        if strategy is Strategy.SINGLE_CHEAPEST:
            self.pool_cap, self.group_cap, self.min_pools, self.hall_cap = target, target, 1, target
        else:
            self.pool_cap = _share(target, caps.pool_share, True)
            self.group_cap = _share(target, caps.group_share, True)
            self.min_pools = caps.min_pools
            self.hall_cap, self.preference = caps.hall_cap(target, len({table.hall[i] for i, _ in live}))
        self.probation_cap = _share(target, caps.probation_share, False)
        self.table = table
        self.ranked = _order(table, shape, live, strategy, self.pool_cap)
        self.placed: dict[int, int] = defaultdict(int)
        self.group_used: dict[str, int] = defaultdict(int)
        self.hall_used: dict[str, int] = defaultdict(int)
        self.target = self.remaining = target
        self.used = 0    # pools holding units
        self.whole = whole_instances(shape, strategy)

    def room(self, i: int, k: int) -> int:
        t, done = self.table, self.placed[i]
        cap = self.probation_cap if t.probation[i] else self.pool_cap
        return max(0, min(cap - done, self.group_cap - self.group_used[t.group[i]],
                          self.hall_cap - self.hall_used[t.hall[i]], t.residual[i] * k - done, self.remaining))

    def take(self, i: int, units: int) -> None:
        self.used += self.placed[i] == 0
        self.placed[i] += units
        self.group_used[self.table.group[i]] += units
        self.hall_used[self.table.hall[i]] += units
        self.remaining -= units

    def keep(self, held: dict[int, int]) -> None:
        """Keep the units held in eligible pools with room, in rank order, within the caps."""
        for i, k in self.ranked:
            if i in held:
                units = min(held[i], self.room(i, k))
                if self.whole and units < held[i]:   # cut by a cap or a lowered claim: whole instances go
                    units = _whole(0, units, k)
                if units > 0:
                    self.take(i, units)

    def rest(self) -> None:
        """Place what is missing: pass 1 keeping one unit back per pool still needed, pass 2 to the caps.

        Where the hall cap is only a preference (``Caps.hall_cap``), pass 3 tops up without it.
        """
        ranked, whole = self.ranked, self.whole
        for index, (i, k) in enumerate(ranked):
            if self.remaining == 0:
                return
            reserve = min(max(0, self.min_pools - self.used - 1), len(ranked) - index - 1, self.remaining - 1)
            units = min(self.room(i, k), self.remaining - reserve)
            if whole:
                units = _whole(self.placed[i], units, k)
            if units > 0:
                self.take(i, units)
        hall_cap = self.hall_cap
        for rounded in (True, False) if whole else (False,):   # whole instances first, then part-filled ones
            self.hall_cap = hall_cap
            for lift in (False, True) if self.preference else (False,):
                if lift:
                    self.hall_cap = self.target
                for i, k in ranked:
                    if self.remaining == 0:
                        return
                    units = self.room(i, k)
                    if rounded:
                        units = _whole(self.placed[i], units, k)
                    if units > 0:
                        self.take(i, units)


def _held(prev: WorkloadPlan, purpose: Purpose, index: dict[str, int]) -> dict[int, int]:
    return {index[a.pool_id]: a.units for a in prev.allocations if a.purpose is purpose and a.pool_id in index}


def _floor(prev: WorkloadPlan, contract: Contract, wanted: int, shape: Shape, caps: Caps, table: PoolTable,
           index: dict[str, int]) -> tuple[dict[int, int], int, list[str]]:
    """The floor: held units in eligible guaranteed pools with room, then the missing ones spread over halls."""
    k = shape.k
    kept: dict[int, int] = {}
    left = wanted
    for i, units in sorted(_held(prev, Purpose.FLOOR, index).items(), key=lambda e: table.ids[e[0]]):
        if i in k and table.residual[i] > 0 and left > 0:
            n = min(units, table.residual[i] * k[i], left)
            kept[i], left = n, left - n
    new: dict[int, int] = {}
    short, notes = 0, list[str]()
    if left > 0:  # the missing units, on a scratch table with the kept instances set aside
        residual = list(table.residual)
        for i, n in kept.items():
            residual[i] -= math.ceil(n / k[i])
        scratch = PoolTable(table.static, residual)
        new, short, notes = fill_floor(left, scratch.guaranteed(contract), caps, scratch)
    merged = dict(kept)
    for i, n in new.items():
        merged[i] = merged.get(i, 0) + n
    return merged, short, notes


def _allocations(placed: dict[int, int], k: dict[int, int], table: PoolTable, purpose: Purpose) -> list[Allocation]:
    ids, rate = table.ids, table.rate
    return [Allocation(ids[i], purpose, units, math.ceil(units / k[i]), rate[i])
            for i, units in sorted(placed.items(), key=lambda item: ids[item[0]]) if units or purpose is Purpose.FLOOR]


def replan(prev: WorkloadPlan, claim: Claim, strategy: Strategy, caps: Caps, table: PoolTable,
           index: dict[str, int]) -> WorkloadPlan:
    """Re-plan ``claim`` from ``prev`` (same contract and strategy), taking what the new plan holds from ``table``.

    ``index`` maps pool id to table row.
    """
    contract = claim.contract
    floor_wanted = math.ceil(claim.units * contract.floor_pct / 100)
    guaranteed = table.guaranteed(contract)
    floor_placed, floor_short, notes = _floor(prev, contract, floor_wanted, guaranteed, caps, table, index)
    floor = _allocations(floor_placed, guaranteed.k, table, Purpose.FLOOR)
    for a in floor:
        table.take(index[a.pool_id], a.instances)
    target = max(0, claim.units - floor_wanted + floor_short - claim.covered)   # fallback holds ``covered``
    if strategy is Strategy.EXPECTED_COST:  # the contract's own weight: kept units stay, the missing ones go cheapest
        shape = table.reclaimable_at(contract.resources, contract.eligible, contract.partition, contract,
                                     weight_of(contract))
    else:
        shape = table.reclaimable(contract)
    if shape.live < caps.min_pools and strategy is not Strategy.SINGLE_CHEAPEST:
        notes.append(f"only {shape.live} eligible pool(s) with capacity, fewer than {caps.min_pools}")
    placed: dict[int, int] = {}
    short = 0
    cheapest_cost = Decimal(0)
    if target > 0:
        work = _Fill(target, shape, Strategy.DEPTH_FIRST if strategy is Strategy.EXPECTED_COST else strategy, caps,
                     table)
        work.keep(_held(prev, Purpose.RECLAIMABLE, index))
        work.rest()
        placed, short = {i: n for i, n in work.placed.items() if n}, work.remaining
        shadow = Strategy.PRICE_FIRST if strategy is not Strategy.SINGLE_CHEAPEST else Strategy.SINGLE_CHEAPEST
        cheapest = placed if shadow is strategy else fill(target, shape, shadow, caps, table)[0]
        cheapest_cost = sum((table.rate[i] * math.ceil(u / shape.k[i]) for i, u in cheapest.items()), Decimal(0))
    reclaim = _allocations(placed, shape.k, table, Purpose.RECLAIMABLE)
    for a in reclaim:
        table.take(index[a.pool_id], a.instances)
    if short:
        notes.append(f"{short} unit(s) short: caps or capacity exhausted")
    return WorkloadPlan(
        workload=contract.workload, claim_digest=claim.digest, strategy=strategy,
        allocations=tuple(floor + reclaim), wanted_units=claim.units, floor_units=floor_wanted - floor_short,
        shortfall_units=short, cheapest_cost_eur_h=cheapest_cost, notes=tuple(notes))


def same_placement(a: WorkloadPlan, b: WorkloadPlan) -> bool:
    """The same claim, pools, purposes, units and instances, floor and shortfall: nothing to launch or end."""
    def shape(p: WorkloadPlan) -> tuple[object, ...]:
        return (p.claim_digest, p.strategy, p.floor_units, p.shortfall_units,
                tuple((x.pool_id, x.purpose, x.units, x.instances) for x in p.allocations))
    return shape(a) == shape(b)
