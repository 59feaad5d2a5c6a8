"""Per-plan tables: what every workload of one plan reads about the pools, built once per plan.

Which pools a workload may use depends on its *shape*, not on the workload: the region, one unit's resources
and the eligibility lists (and, for the floor, the business unit). So eligibility, units per instance and the
rank orders are computed once per shape and plan, in the order of the exact ``Decimal`` keys the planner always
used (the plans stay the same to the unit), from integer keys where those give the same order (``ranks``); the
pool columns a shape reads (fit, eligibility, business unit) are read once per plan. Residual capacity is one
list indexed like the pools; each shape counts its pools with capacity left, in all and per hall, updated when
a pool runs out, so a workload reads those counts instead of scanning every pool. Residual capacity only
shrinks within a plan, so a pool that ran out stays out and the rank orders drop such pools as they meet them.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable
from decimal import Decimal

from contracts.pools import PurchaseModel
from contracts.schema import Contract, Eligibility, Resources

from .model import Allocation, Purpose
from .placed import Placed
from .static import Entry, Order, ShapeStatic, Static

__all__ = ["Entry", "Order", "PoolTable", "Shape", "ShapeStatic", "Static"]

_ONE = Decimal(1)


class Shape:
    """A shape in one plan: its static part, and how many of its pools have capacity left.

    The counts (in all, per hall, per units an instance) are updated when a pool runs out.
    """

    __slots__ = ("by_hall", "entries", "fills", "floors", "halls", "heaps", "k", "live", "live_by_k", "live_halls",
                 "max_k", "max_rate_pct_h", "orders", "starts", "weight")

    def __init__(self, static: ShapeStatic, table: PoolTable) -> None:
        self.entries, self.k, self.max_k, self.weight = static.entries, static.k, static.max_k, static.weight
        self.max_rate_pct_h = static.max_rate_pct_h
        self.orders, self.by_hall = static.orders, static.by_hall
        self.live = len(self.entries)
        self.live_halls, self.live_by_k = Counter(static.halls), Counter(static.units)
        for i in table.dead:  # the pools with no capacity left
            k = self.k.get(i)
            if k is not None:
                self.live -= 1
                self.live_halls[table.hall[i]] -= 1
                self.live_by_k[k] -= 1
        self.halls = sum(1 for n in self.live_halls.values() if n > 0)  # halls with a pool with capacity left
        # results of this plan's fills, by what decides them besides the pools they use (``placed.Placed``)
        self.fills: tuple[dict[tuple[int, int], Placed], dict[tuple[int, int], Placed]] = ({}, {})  # depth, price
        self.floors: dict[tuple[int, int], Placed] = {}
        self.starts: dict[str, dict[tuple[str, int], int]] = {"depth": {}, "price": {}}
        # per rank order and pool cap (up to the biggest instance): live pools then, the lanes' heads (a heap of
        # ranks) and links
        self.heaps: dict[tuple[bool, int], tuple[int, list[int], list[int]]] = {}
        table.shapes.append(self)

    def ran_out(self, i: int, hall: str) -> None:
        """Pool ``i`` (in ``hall``) has no capacity left."""
        self.live -= 1
        self.live_halls[hall] -= 1
        if not self.live_halls[hall]:
            self.halls -= 1
        self.live_by_k[self.k[i]] -= 1

    def halls_alive(self) -> list[str]:
        """The halls where at least one of the shape's pools has capacity left, sorted."""
        return sorted(h for h, n in self.live_halls.items() if n > 0)

    def live_bigger_than(self, units: int) -> int:
        """How many of the shape's pools with capacity left hold more than ``units`` units an instance."""
        return sum(n for k, n in self.live_by_k.items() if k > units)


class PoolTable:
    """The pools in force for one plan: the static columns and shapes, residual capacity, live counts."""

    def __init__(self, static: Static, residual: list[int]) -> None:
        self.static = static
        self.ids, self.rate, self.hall = static.ids, static.rate, static.hall
        self.group, self.score, self.probation = static.group, static.score, static.probation
        self.threshold = static.threshold
        self.residual = residual
        self.dead = [i for i, n in enumerate(residual) if n <= 0]  # pools with no capacity left, so far
        self.shapes: list[Shape] = []  # the plan's shapes (a pool that runs out is looked up in each)
        self._reclaimable: dict[tuple[object, ...], Shape] = {}
        self._guaranteed: dict[tuple[object, ...], Shape] = {}
        # the same shapes by the identity of the contract's parts (with the parts, so no id is reused): the
        # workloads of one template share them, and the identity is cheaper to key on than their values
        self._by_parts: dict[tuple[object, ...], tuple[object, object, Shape]] = {}
        # the last contract parts each lookup saw, and their shape (no part is ``None``: a fresh table matches none)
        self._last_reclaimable: tuple[object, object, object, object] = (None, None, None, None)
        self._last_guaranteed: tuple[object, object, object, object] = (None, None, None, None)
        self._last_costed: tuple[object, object, object, object, object] = (None, None, None, None, None)
        self._made: dict[int, Shape] = {}  # this table's shape of each static part (which the table's static holds)
        # the water-fill's caps by (target, live halls), and (target, live halls, True) for single-cheapest
        self.limits: dict[tuple[int, ...], tuple[int, int, int, int, int]] = {}
        # allocations made in this plan: by purpose and shape (the ``id`` of its units per instance, which lives
        # as long as the table), per pool (a list indexed like the pools), by units
        self.made: dict[tuple[Purpose, int], list[dict[int, Allocation] | None]] = {}

    def take(self, i: int, instances: int) -> None:
        """Take ``instances`` of pool ``i``; shapes learn when it runs out."""
        before = self.residual[i]
        self.residual[i] = after = before - instances
        if before > 0 >= after:
            self.ran_out(i)

    def take_all(self, pools: Iterable[int], instances: list[int]) -> None:
        """``take`` the instances of each pool."""
        residual = self.residual
        for i, n in zip(pools, instances):  # noqa: B905 (parallel by construction, Placed; ``strict=`` costs ~100 ns)
            before = residual[i]
            residual[i] = after = before - n
            if before > 0 >= after:
                self.ran_out(i)

    def ran_out(self, i: int) -> None:
        """Pool ``i`` has just run out: it is dead, and every shape it is in counts one live pool less."""
        self.dead.append(i)
        for shape in self.shapes:
            if i in shape.k:
                shape.ran_out(i, self.hall[i])

    def _base(self, kind: str, region: str) -> list[int]:
        """The pools of ``region`` a shape of ``kind`` may use, before fit (computed once per table).

        Reclaimable: discount pools not excluded; guaranteed: committed and guaranteed pools not excluded.
        """
        key = (kind, region)
        base = self.static.bases.get(key)
        if base is None:
            base = self.static.bases[key] = []
            reclaimable, threshold, wanted = PurchaseModel.RECLAIMABLE, self.threshold, kind == "reclaimable"
            st = self.static
            for i, (out, where, model, rate, g) in enumerate(zip(st.excluded, st.region, st.model, st.rate,
                                                                  st.guaranteed_rate, strict=True)):
                if out or where != region or (model is reclaimable) is not wanted:
                    continue
                if not wanted or (rate / g if g else _ONE) < threshold:  # PoolState.discount_ratio, on the columns
                    base.append(i)
        return base

    def _fits(self, kind: str, region: str, r: Resources) -> list[Entry]:
        """The pools of ``_base(kind, region)`` one unit of ``r`` fits in, with units per instance.

        Grouped by flavour (units per instance are the flavour's), in the order of each flavour's first pool.
        Not kept: a shape keeps the entries it may use, and keeping every pool that fits beside them (a list of
        a thousand pairs per shape) only gave the collector more to walk after each plan.
        """
        v, m, g = r.vcpu, r.memory_gib, r.gpu
        fits: list[Entry] = []
        for (vcpu, memory, gpu), pools in self._by_flavour(kind, region).items():
            k = min(vcpu // v, memory // m, gpu // g) if g else min(vcpu // v, memory // m)
            if k > 0:
                fits += zip(pools, itertools.repeat(k, len(pools)), strict=True)
        return fits

    def _by_flavour(self, kind: str, region: str) -> dict[tuple[int, int, int], list[int]]:
        """``_base(kind, region)`` by flavour (vCPU, memory, GPU), each in pool order (computed once per table)."""
        key = (kind, region)
        groups = self.static.base_flavours.get(key)
        if groups is None:
            st = self.static
            flavours, flavour = st.flavours, st.flavour
            groups = st.base_flavours[key] = {}
            for i in self._base(kind, region):
                groups.setdefault(flavours[flavour[i]], []).append(i)
        return groups

    def reclaimable(self, contract: Contract) -> Shape:
        """Reclaimable discount pools of the contract's region that fit one of its units (ADR-08)."""
        return self.reclaimable_of(contract.resources, contract.eligible, contract.partition, contract)

    def reclaimable_of(self, r: Resources, e: Eligibility, partition: str, contract: Contract) -> Shape:
        """``reclaimable(contract)``, given the contract's resources, eligibility and partition (read already)."""
        last = self._last_reclaimable  # the workloads of a template come one after another in priority order
        if last[0] is r and last[1] is e and last[2] == partition:
            return last[3]  # type: ignore[return-value]
        parts = (id(r), id(e), partition)
        seen = self._by_parts.get(parts)
        if seen is not None and seen[0] is r and seen[1] is e:
            shape = seen[2]
        else:
            shape = self._reclaimable_by_value(contract)
            self._by_parts[parts] = (r, e, shape)
        self._last_reclaimable = (r, e, partition, shape)
        return shape

    def reclaimable_at(self, r: Resources, e: Eligibility, partition: str, contract: Contract,
                       weight: float) -> Shape:
        """``reclaimable_of``'s pools, ranked by expected cost for a reclaim that costs ``weight`` hours of work.

        ``weight``: ``risk.weight_of`` the workload. A shape of its own, so its fills and orders are too.
        """
        last = self._last_costed  # the workloads of a template come one after another in priority order
        if last[0] is r and last[1] is e and last[2] == partition and last[3] == weight:
            return last[4]  # type: ignore[return-value]
        parts = (id(r), id(e), partition, weight)
        seen = self._by_parts.get(parts)
        if seen is not None and seen[0] is r and seen[1] is e:
            shape = seen[2]
        else:
            shape = self._reclaimable_by_value(contract, weight)
            self._by_parts[parts] = (r, e, shape)
        self._last_costed = (r, e, partition, weight, shape)
        return shape

    def _reclaimable_by_value(self, contract: Contract, weight: float | None = None) -> Shape:
        r, e = contract.resources, contract.eligible
        key = (contract.region, r.vcpu, r.memory_gib, r.gpu, e.sku_families, e.sizes, e.halls, weight)
        shape = self._reclaimable.get(key)
        if shape is not None:
            return shape
        static = self.static.reclaimable.get(key)
        if static is None:
            entries = self.static.eligible.get(key[:-1])  # the same pools whatever the weight
            if entries is None:
                entries = self._fits("reclaimable", contract.region, r)
                for wanted, column in ((e.sku_families, self.static.sku), (e.sizes, self.static.size),
                                       (e.halls, self.hall)):
                    if wanted:
                        entries = [e for e in entries if column[e[0]] in wanted]
                self.static.eligible[key[:-1]] = entries
            static = self.static.reclaimable[key] = (self._costed_static(key[:-1], entries, weight)
                                                     if weight is not None else ShapeStatic(entries, self.hall))
        shape = self._made.get(id(static))  # a weight ranking like another is that one's shape: its fills too
        if shape is None:
            shape = self._made[id(static)] = Shape(static, self)
        self._reclaimable[key] = shape
        return shape

    def _costed_static(self, base: tuple[object, ...], entries: list[Entry], weight: float) -> ShapeStatic:
        """The static part of an expected-cost shape: its depth order by expected cost per unit, then pool id.

        Two weights that rank the shape's pools the same way (by cost per unit, and by cost alone, which orders
        the oversize pools a cap cuts to the same units) share one static part, so their workloads share fills
        (most weights rank alike: a reclaim's cost moves few pools past one another).
        """
        cost, id_rank = self.static.cost(weight), self.static.id_rank
        # the keys built once, the sort on their positions (no Python call per comparison)
        keys = [(cost[i] / k, id_rank[i]) for i, k in entries]
        per_unit = [entries[j] for j in sorted(range(len(entries)), key=keys.__getitem__)]
        keys = [(cost[i], id_rank[i]) for i, _ in entries]
        alone = tuple(entries[j][0] for j in sorted(range(len(entries)), key=keys.__getitem__))
        twin = (base, tuple(per_unit), alone)
        static = self.static.twins.get(twin)
        if static is None:
            static = self.static.twins[twin] = ShapeStatic(entries, self.hall, weight)
            static.orders["depth"] = Order(per_unit, self.hall, self.static.hall_no, self.static.halls)
            p = self.static.reclaim_p
            static.max_rate_pct_h = 100.0 * max((p[i] for i, _ in entries), default=0.0)
        return static

    def guaranteed(self, contract: Contract) -> Shape:
        """The business unit's committed pools and on-demand guaranteed pools of the region (ADR-22)."""
        return self.guaranteed_of(contract.resources, contract.business_unit, contract.partition, contract)

    def guaranteed_of(self, r: Resources, bu: str | None, partition: str, contract: Contract) -> Shape:
        """``guaranteed(contract)``, given the contract's resources, business unit and partition (read already)."""
        last = self._last_guaranteed
        if last[0] is r and last[1] == bu and last[2] == partition:
            return last[3]  # type: ignore[return-value]
        parts = (id(r), bu, partition, "guaranteed")
        seen = self._by_parts.get(parts)
        if seen is not None and seen[0] is r:
            shape = seen[2]
        else:
            shape = self._guaranteed_by_value(contract)
            self._by_parts[parts] = (r, None, shape)
        self._last_guaranteed = (r, bu, partition, shape)
        return shape

    def _guaranteed_by_value(self, contract: Contract) -> Shape:
        r, bu = contract.resources, contract.business_unit
        key = (contract.region, r.vcpu, r.memory_gib, r.gpu, bu)
        shape = self._guaranteed.get(key)
        if shape is not None:
            return shape
        static = self.static.guaranteed.get(key)
        if static is None:
            committed, unit = self.static.committed, self.static.business_unit
            entries = [e for e in self._fits("guaranteed", contract.region, r)
                       if not committed[e[0]] or unit[e[0]] == bu]
            static = self.static.guaranteed[key] = ShapeStatic(entries, self.hall)
            self._floor_order(static)
        shape = self._guaranteed[key] = Shape(static, self)
        return shape

    def _floor_order(self, shape: ShapeStatic) -> None:
        """Per hall, committed before on-demand, then cheapest rate per unit (EUR/h), then pool id."""
        committed, keys = self.static.committed, self.static.keys
        ranked = keys.floor(shape.entries, committed) if keys is not None else None
        if ranked is None:
            rate, ids = self.rate, self.ids
            ranked = sorted(shape.entries, key=lambda e: (0 if committed[e[0]] else 1, rate[e[0]] / e[1], ids[e[0]]))
        for e in ranked:
            shape.by_hall.setdefault(self.hall[e[0]], []).append(e)

    def order(self, shape: Shape, price_first: bool) -> Order:
        """The shape's pools in rank order (some may have run out), for pools that fit the pool cap.

        Depth-first: best score, then rate per unit, then pool id; price-first: rate per unit, then score,
        then pool id: the water-fill's keys for pools whose instance is not bigger than the cap. An expected-cost
        shape (``Shape.weight``) ranks by expected cost per unit-hour, then pool id, in place of the score's order.
        """
        key = "price" if price_first else "depth"
        order = shape.orders.get(key)
        if order is None and not price_first and shape.weight is not None:
            cost, id_rank = self.static.cost(shape.weight), self.static.id_rank
            by_cost = sorted(shape.entries, key=lambda e: (cost[e[0]] / e[1], id_rank[e[0]]))
            order = shape.orders[key] = Order(by_cost, self.hall, self.static.hall_no, self.static.halls)
        if order is None:
            keys = self.static.keys
            ranked = None if keys is None else keys.price(shape.entries) if price_first else keys.depth(shape.entries)
            if ranked is None:
                rate, score, ids = self.rate, self.score, self.ids
                if price_first:
                    ranked = sorted(shape.entries, key=lambda e: (rate[e[0]] / e[1], -score[e[0]], ids[e[0]]))
                else:
                    ranked = sorted(shape.entries, key=lambda e: (-score[e[0]], rate[e[0]] / e[1], ids[e[0]]))
            order = shape.orders[key] = Order(ranked, self.hall, self.static.hall_no, self.static.halls)
        return order
