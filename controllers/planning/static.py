"""A plan's per-pool columns: every fact of the pools in force a fill reads, one list a fact.

The planner reads the pool states once per plan into columns indexed by row, a row a pool in pool id order, and
builds every shape's tables from them (``tables``). The states and their catalogue pools are read in one pass
each: a pass a column read two thousand pools' attributes a dozen times and missed the cache on most of them.

A shape's static part (``ShapeStatic``: its pools, units per instance, rank orders as ``Order`` lanes) depends on
the pools in force only, so it lives here with the columns it is built from, and ``Static`` keeps it across plans
(``tables`` builds it and names it again).
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Sequence
from decimal import Decimal

from contracts.pools import PurchaseModel

from .model import PoolState
from .ranks import Keys

__all__ = ["Entry", "Order", "ShapeStatic", "Static"]

Entry = tuple[int, int]  # (pool index, units one instance holds)

# the attributes ``Static`` reads of a catalogue pool and of a pool state, in its order
_POOL_COLUMNS = operator.attrgetter("rate_eur_h", "hall", "aggregate", "purchase_model", "sku_family", "size",
                                    "business_unit", "vcpu", "memory_gib", "gpu", "region", "guaranteed_rate_eur_h")
_STATE_COLUMNS = operator.attrgetter("rate_override", "group", "score", "probation", "available_instances",
                                     "excluded", "reclaim_p")


class Order:
    """A rank order of a shape's pools, and the same order split in lanes.

    A lane holds the pools of one hall, or of one hall and one number of units per instance, linked by rank:
    ``first`` is a lane's best-ranked pool, ``next`` (for (hall, 0) lanes) and ``next_k`` (for (hall, k) lanes)
    the next pool of its lane by rank, -1 after the last. A fill merges the lanes of the pools that fit its pool
    cap by rank (a heap of ranks: plain integers), and drops a hall's lanes when the hall is full. Pools that
    ran out stay in the lanes (a plan's residual capacity only shrinks, so they never come back); a shape's
    ``starts`` skip those at the head of a lane, where the best-ranked pools run out first. An order depends on
    the pools in force only, so a table's ``Static`` part keeps it across plans.
    """

    __slots__ = ("entries", "first", "hall", "next", "next_k")

    def __init__(self, entries: list[Entry], hall: list[str], hall_no: list[int], halls: int) -> None:
        self.entries = entries
        self.hall = hall
        self.first: dict[tuple[str, int], int] = {}
        self.next, self.next_k = self._link(hall_no, halls)

    def _link(self, hall_no: list[int], halls: int) -> tuple[list[int], list[int]]:
        """Both lanes' links in one pass: the (hall, 0) lanes and, within each hall, the (hall, k) lanes.

        Nearly every fill of a shape needs both (the split ones when its pool cap is below the biggest
        instance), so they are built together. A lane's last position so far is kept in a list indexed by the
        hall's number (and ``k``): ``hall_no`` numbers the halls 0..``halls - 1``.
        """
        entries, hall, first = self.entries, self.hall, self.first
        following, following_k = [-1] * len(entries), [-1] * len(entries)
        width = max(map(operator.itemgetter(1), entries), default=0) + 1
        last = [-1] * halls  # per hall, its last position so far
        last_k = [-1] * (halls * width)  # per hall and units an instance, the same
        for pos, (i, k) in enumerate(entries):
            h = hall_no[i]
            before = last[h]
            if before < 0:
                first[(hall[i], 0)] = pos
            else:
                following[before] = pos
            last[h] = pos
            lane = h * width + k
            before = last_k[lane]
            if before < 0:
                first[(hall[i], k)] = pos
            else:
                following_k[before] = pos
            last_k[lane] = pos
        return following, following_k

    def split(self) -> list[int]:
        """The (hall, k) lanes' links (and their ``first``)."""
        return self.next_k


class ShapeStatic:
    """What a shape's pools are, with units per instance, rank orders and floor order: pools-in-force facts."""

    __slots__ = ("by_hall", "entries", "halls", "k", "max_k", "max_rate_pct_h", "orders", "units", "weight")

    def __init__(self, entries: list[Entry], hall: list[str], weight: float | None = None) -> None:
        self.entries = entries
        # expected-cost shapes: the hours of work a reclaim costs their workloads (``risk``); their depth order is
        # the expected cost per unit-hour. None: the composite score's order
        self.weight = weight
        self.max_rate_pct_h = 100.0  # the likeliest of its pools to be reclaimed within the hour, in %/h
        self.k = dict(entries)
        self.max_k = max(self.k.values(), default=0)
        self.orders: dict[str, Order] = {}
        self.by_hall: dict[str, list[Entry]] = {}
        self.halls = Counter(map(hall.__getitem__, self.k))  # pools per hall, and per units an instance
        self.units = Counter(self.k.values())


class Static:
    """The per-pool columns of the pools in force (a row a pool, in pool id order), and the shapes' static parts.

    It depends on the pool states and the discount threshold only, not on residual capacity, so the planner
    keeps it beside a plan set and a next pass over the very same pool states reuses it.
    """

    def __init__(self, pools: Sequence[PoolState], threshold: Decimal) -> None:
        self.given = tuple(pools)
        ids = [s.pool.pool_id for s in self.given]
        by_id = sorted(range(len(ids)), key=ids.__getitem__)  # stable: pools sharing an id keep their order
        # the rows in pool id order, so a row's number is its rank by pool id: a fill's pools sort by their row
        # numbers alone (``placed.Placed.allocations``), and ties broken by pool id are broken by row
        states = tuple(map(self.given.__getitem__, by_id))
        catalogue = [s.pool for s in states]
        self.ids = list(map(ids.__getitem__, by_id))
        self.id_rank = list(range(len(ids)))  # each row's position in pool id order: its own
        # every column a pool gives, read in one pass over the pools and turned into columns (a pass a column
        # read two thousand pools' attributes sixteen times, and they no longer fit the cache)
        rate, hall, aggregate, model, sku, size, unit, vcpu, memory, gpu, region, guaranteed = map(
            list, zip(*map(_POOL_COLUMNS, catalogue), strict=True)) if catalogue else ([],) * 12
        override, group, score, probation, available, excluded, reclaim_p = map(
            list, zip(*map(_STATE_COLUMNS, states), strict=True)) if catalogue else ([],) * 7
        self.rate: list[Decimal] = [r if o is None else o for r, o in zip(rate, override, strict=True)]  # .rate_eur_h
        self.hall: list[str] = hall
        self.group: list[str] = [g or a for g, a in zip(group, aggregate, strict=True)]  # PoolState.group_id
        self.score: list[float] = score
        self.probation: list[bool] = probation
        self.available: list[int] = available
        self.sku: list[object] = sku
        self.size: list[object] = size
        self.business_unit: list[object] = unit
        self.region: list[str] = region
        self.guaranteed_rate: list[Decimal | None] = guaranteed
        self.excluded: list[bool] = excluded
        self.reclaim_p: list[float] = reclaim_p  # P(reclaim within 1 h), ``PoolState.reclaim_p``
        self.costs: dict[float, list[float]] = {}  # per interruption weight, ``cost``
        self._floats: tuple[list[float], list[float]] | None = None  # rate, guaranteed rate as floats
        self.model: list[PurchaseModel] = model
        # halls and correlation groups numbered 0.. (in order of first appearance), for lists indexed by them
        numbers: dict[str, int] = {}
        self.hall_no = [numbers.setdefault(h, len(numbers)) for h in self.hall]
        self.halls = len(numbers)
        numbers = {}
        self.group_no = [numbers.setdefault(g, len(numbers)) for g in self.group]
        self.groups = len(numbers)
        self._index: dict[str, int] | None = None
        self.threshold = threshold
        self.reclaimable: dict[tuple[object, ...], ShapeStatic] = {}
        self.eligible: dict[tuple[object, ...], list[tuple[int, int]]] = {}  # a shape's pools, whatever its weight
        # expected-cost shapes' static parts by what their orders are (``tables.PoolTable._costed_static``)
        self.twins: dict[tuple[object, ...], ShapeStatic] = {}
        self.guaranteed: dict[tuple[object, ...], ShapeStatic] = {}
        self.bases: dict[tuple[str, str], list[int]] = {}
        self.base_flavours: dict[tuple[str, str], dict[tuple[int, int, int], list[int]]] = {}
        committed = PurchaseModel.COMMITTED
        self.committed = [m is committed for m in model]
        # each pool's flavour (vCPU, memory, GPU) by number: units per instance are computed once a flavour
        flavours: dict[tuple[int, int, int], int] = {}
        self.flavour = [flavours.setdefault(f, len(flavours)) for f in zip(vcpu, memory, gpu, strict=True)]
        self.flavours = list(flavours)
        self.keys = Keys.of(self.rate, self.score, self.id_rank)

    def cost(self, weight: float) -> list[float]:
        """Per pool, its rate plus P(reclaim in 1 h) x ``weight`` hours of work at its guaranteed rate.

        EUR/h per instance, as floats: an order key, not a price. Computed once per weight (``risk``), from the
        rates as floats (converted once per table, when the first expected-cost shape asks).
        """
        column = self.costs.get(weight)
        if column is None:
            if self._floats is None:
                rate = [float(r) for r in self.rate]
                self._floats = (rate, [float(g) if g is not None else r
                                       for g, r in zip(self.guaranteed_rate, rate, strict=True)])
            rate, guaranteed = self._floats
            column = self.costs[weight] = [r + p * weight * g for r, p, g in zip(rate, self.reclaim_p, guaranteed,
                                                                                strict=True)]
        return column

    @property
    def index(self) -> dict[str, int]:
        """Pool id -> row (the last row of an id, should two rows share one), built when first asked for."""
        if self._index is None:
            self._index = {pid: i for i, pid in enumerate(self.ids)}
        return self._index

    def same(self, pools: Sequence[PoolState], threshold: Decimal) -> bool:
        """Whether ``pools`` are the very pool states (same objects, same order) and threshold of this one."""
        return (threshold == self.threshold and len(pools) == len(self.given)
                and all(map(operator.is_, pools, self.given)))
