"""Per-plan tables (issue 18): what every workload of one plan reads about the pools, built once per plan.

Which pools a workload may use depends on its *shape*, not on the workload: the region, one unit's resources
and the eligibility lists (and, for the floor, the business unit). So eligibility, units per instance and the
rank orders are computed once per shape and plan, in the exact ``Decimal`` keys the planner always used (the
plans stay the same to the unit). Residual capacity is one list indexed like the pools; each shape counts its
pools with capacity left, in all and per hall, updated when a pool runs out, so a workload reads those counts
instead of scanning every pool. Residual capacity only shrinks within a plan, so a pool that ran out stays out
and the rank orders drop such pools as they meet them.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Sequence
from decimal import Decimal

from contracts.pools import Pool, PurchaseModel
from contracts.schema import Contract, Resources

from .model import PoolState

__all__ = ["Order", "PoolTable", "Shape", "ShapeStatic", "Static"]

Entry = tuple[int, int]  # (pool index, units one instance holds)


def _units(pool: Pool, r: Resources) -> int:
    """``model.units_per_instance``, from the unit's resources."""
    fits = min(pool.vcpu // r.vcpu, pool.memory_gib // r.memory_gib)
    if r.gpu:
        fits = min(fits, pool.gpu // r.gpu)
    return max(0, fits)


class Order:
    """A rank order of a shape's pools, and the same order split in lanes.

    A lane holds the pools of one hall and one number of units per instance, each with its position in the
    whole order. A fill merges the lanes of the pools that fit its pool cap, and drops a hall's lanes when the
    hall is full. Pools that ran out stay in the lists (a plan's residual capacity only shrinks, so they never
    come back); a shape's ``starts`` skip those at the head of a lane, where the best-ranked pools run out
    first. An order depends on the pools in force only, so a table's ``Static`` part keeps it across plans.
    """

    __slots__ = ("entries", "hall", "lanes")

    def __init__(self, entries: list[Entry], hall: list[str]) -> None:
        self.entries = entries
        self.hall = hall
        # lanes keyed (hall, 0) hold every pool of the hall; (hall, k) lanes, the pools holding k units an
        # instance, are made when a fill first needs them (a pool cap some instances exceed)
        self.lanes: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
        lanes = self.lanes
        for pos, (i, k) in enumerate(entries):
            lane = lanes.get((hall[i], 0))
            if lane is None:
                lane = lanes[(hall[i], 0)] = []
            lane.append((pos, i, k))

    def split(self) -> None:
        """Add the (hall, k) lanes."""
        if any(k for _, k in self.lanes):
            return
        for (hall, _), entries in list(self.lanes.items()):
            for e in entries:
                self.lanes.setdefault((hall, e[2]), []).append(e)


class ShapeStatic:
    """What a shape's pools are, with units per instance, rank orders and floor order: pools-in-force facts."""

    __slots__ = ("by_hall", "entries", "k", "max_k", "orders")

    def __init__(self, entries: list[Entry]) -> None:
        self.entries = entries
        self.k = dict(entries)
        self.max_k = max(self.k.values(), default=0)
        self.orders: dict[str, Order] = {}
        self.by_hall: dict[str, list[Entry]] = {}


class Shape:
    """A shape in one plan: its static part, and how many of its pools have capacity left.

    The counts (in all, per hall, per units an instance) are updated when a pool runs out.
    """

    __slots__ = ("by_hall", "entries", "k", "live", "live_by_k", "live_halls", "max_k", "orders", "starts")

    def __init__(self, static: ShapeStatic, table: PoolTable) -> None:
        self.entries, self.k, self.max_k = static.entries, static.k, static.max_k
        self.orders, self.by_hall = static.orders, static.by_hall
        residual, halls = table.residual, table.hall
        alive = [(i, k) for i, k in self.entries if residual[i] > 0]
        self.live = len(alive)
        self.live_halls = Counter(halls[i] for i, _ in alive)
        self.live_by_k = Counter(k for _, k in alive)
        self.starts: dict[str, dict[tuple[str, int], int]] = {"depth": {}, "price": {}}
        for i, _ in self.entries:
            table.member_of[i].append(self)

    def ran_out(self, i: int, hall: str) -> None:
        """Pool ``i`` (in ``hall``) has no capacity left."""
        self.live -= 1
        self.live_halls[hall] -= 1
        self.live_by_k[self.k[i]] -= 1

    def halls_alive(self) -> list[str]:
        """The halls where at least one of the shape's pools has capacity left, sorted."""
        return sorted(h for h, n in self.live_halls.items() if n > 0)

    def live_bigger_than(self, units: int) -> int:
        """How many of the shape's pools with capacity left hold more than ``units`` units an instance."""
        return sum(n for k, n in self.live_by_k.items() if k > units)


class Static:
    """The per-pool columns of the pools in force, and the shapes' static parts, built on demand.

    It depends on the pool states and the discount threshold only, not on residual capacity, so the planner
    keeps it beside a plan set and a next pass over the very same pool states reuses it.
    """

    def __init__(self, pools: Sequence[PoolState], threshold: Decimal) -> None:
        self.states = tuple(pools)
        self.ids = [s.pool_id for s in self.states]
        self.rate = [s.rate_eur_h for s in self.states]
        self.hall = [s.pool.hall for s in self.states]
        self.group = [s.group_id for s in self.states]
        self.score = [s.score for s in self.states]
        self.probation = [s.probation for s in self.states]
        self.threshold = threshold
        self.reclaimable: dict[tuple[object, ...], ShapeStatic] = {}
        self.guaranteed: dict[tuple[object, ...], ShapeStatic] = {}
        self.bases: dict[tuple[str, str], list[int]] = {}

    def same(self, pools: Sequence[PoolState], threshold: Decimal) -> bool:
        """Whether ``pools`` are the very pool states (same objects, same order) and threshold of this one."""
        return (threshold == self.threshold and len(pools) == len(self.states)
                and all(map(operator.is_, pools, self.states)))


class PoolTable:
    """The pools in force for one plan: the static columns and shapes, residual capacity, live counts."""

    def __init__(self, static: Static, residual: list[int]) -> None:
        self.static = static
        self.states, self.ids, self.rate, self.hall = static.states, static.ids, static.rate, static.hall
        self.group, self.score, self.probation = static.group, static.score, static.probation
        self.threshold = static.threshold
        self.residual = residual
        self.member_of: list[list[Shape]] = [[] for _ in self.states]
        self._reclaimable: dict[tuple[object, ...], Shape] = {}
        self._guaranteed: dict[tuple[object, ...], Shape] = {}

    def take(self, i: int, instances: int) -> None:
        """Take ``instances`` of pool ``i``; shapes learn when it runs out."""
        before = self.residual[i]
        self.residual[i] = before - instances
        if before > 0 >= self.residual[i]:
            for shape in self.member_of[i]:
                shape.ran_out(i, self.hall[i])

    def _base(self, kind: str, region: str) -> list[int]:
        """The pools of ``region`` a shape of ``kind`` may use, before fit (computed once per table).

        Reclaimable: discount pools not excluded; guaranteed: committed and guaranteed pools not excluded.
        """
        key = (kind, region)
        base = self.static.bases.get(key)
        if base is None:
            base = self.static.bases[key] = []
            for i, s in enumerate(self.states):
                p = s.pool
                if s.excluded or p.region != region:
                    continue
                if kind == "reclaimable":
                    if p.purchase_model is PurchaseModel.RECLAIMABLE and s.discount_ratio < self.threshold:
                        base.append(i)
                elif p.purchase_model is not PurchaseModel.RECLAIMABLE:
                    base.append(i)
        return base

    def reclaimable(self, contract: Contract) -> Shape:
        """Reclaimable discount pools of the contract's region that fit one of its units (ADR-08)."""
        r, e = contract.resources, contract.eligible
        key = (contract.region, r.vcpu, r.memory_gib, r.gpu, e.sku_families, e.sizes, e.halls)
        shape = self._reclaimable.get(key)
        if shape is not None:
            return shape
        static = self.static.reclaimable.get(key)
        if static is None:
            entries = []
            for i in self._base("reclaimable", key[0]):
                p = self.states[i].pool
                if ((e.sku_families and p.sku_family not in e.sku_families) or (e.sizes and p.size not in e.sizes)
                        or (e.halls and p.hall not in e.halls)):
                    continue
                k = _units(p, r) if p.vcpu >= r.vcpu and p.memory_gib >= r.memory_gib and p.gpu >= r.gpu else 0
                if k > 0:
                    entries.append((i, k))
            static = self.static.reclaimable[key] = ShapeStatic(entries)
        shape = self._reclaimable[key] = Shape(static, self)
        return shape

    def guaranteed(self, contract: Contract) -> Shape:
        """The business unit's committed pools and on-demand guaranteed pools of the region (ADR-22)."""
        r, bu = contract.resources, contract.business_unit
        key = (contract.region, r.vcpu, r.memory_gib, r.gpu, bu)
        shape = self._guaranteed.get(key)
        if shape is not None:
            return shape
        static = self.static.guaranteed.get(key)
        if static is None:
            entries = []
            for i in self._base("guaranteed", key[0]):
                p = self.states[i].pool
                if p.purchase_model is PurchaseModel.COMMITTED and p.business_unit != bu:
                    continue
                k = _units(p, r)
                if k > 0:
                    entries.append((i, k))
            static = self.static.guaranteed[key] = ShapeStatic(entries)
            self._floor_order(static)
        shape = self._guaranteed[key] = Shape(static, self)
        return shape

    def _floor_order(self, shape: ShapeStatic) -> None:
        """Per hall, committed before on-demand, then cheapest rate per unit (EUR/h), then pool id."""
        states = self.states

        def preference(e: Entry) -> tuple[int, Decimal, str]:
            s = states[e[0]]
            return (0 if s.pool.purchase_model is PurchaseModel.COMMITTED else 1, self.rate[e[0]] / e[1],
                    self.ids[e[0]])

        for e in sorted(shape.entries, key=preference):
            shape.by_hall.setdefault(self.hall[e[0]], []).append(e)

    def order(self, shape: Shape, price_first: bool) -> Order:
        """The shape's pools in rank order (some may have run out), for pools that fit the pool cap.

        Depth-first: best score, then rate per unit, then pool id; price-first: rate per unit, then score,
        then pool id: the water-fill's keys for pools whose instance is not bigger than the cap.
        """
        key = "price" if price_first else "depth"
        order = shape.orders.get(key)
        if order is None:
            rate, score, ids = self.rate, self.score, self.ids
            if price_first:
                ranked = sorted(shape.entries, key=lambda e: (rate[e[0]] / e[1], -score[e[0]], ids[e[0]]))
            else:
                ranked = sorted(shape.entries, key=lambda e: (-score[e[0]], rate[e[0]] / e[1], ids[e[0]]))
            order = shape.orders[key] = Order(ranked, self.hall)
        return order
