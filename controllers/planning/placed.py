"""A fill's result: units per pool, the instances it takes, its allocations and cost, built once.

Workloads of one shape often ask the same fill of the same pools (same units, same strategy), and a pool's
capacity is rarely what limits a fill (a pool holds hundreds of instances, a workload takes a few of each), so
a plan keeps each fill's result on its shape (``Shape.fills``, ``Shape.floors``) and hands it to the next
workload that asks the same when the pools it used still have the room it needed (``valid``): the fill would
place the same units in the same pools. The result then also shares its allocations (frozen values) and its
cost, which are what the plans are made of.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Protocol

from .model import Allocation, Purpose, allocation

__all__ = ["NOTHING", "Columns", "Placed"]


class Columns(Protocol):
    """What a fill's result reads of its plan's pool table (``tables.PoolTable`` is one).

    Said here rather than imported: the table keeps fills on its shapes, so it knows ``Placed``, and a fill knowing
    the table back would tie the two modules in a circle.
    """

    @property
    def ids(self) -> list[str]:
        """Pool id by pool index."""

    @property
    def rate(self) -> list[Decimal]:
        """Rate (EUR/h an instance) by pool index."""

    @property
    def made(self) -> dict[tuple[Purpose, int], list[dict[int, Allocation] | None]]:
        """The plan's allocations by purpose and shape, per pool, by units (``PoolTable.made``)."""


class Placed:
    """Units per pool index, the shortfall and notes of one fill; the instances it takes of each pool.

    ``pools`` and ``instances``: the pools it uses, in the order the fill placed them (``placed`` itself: its
    keys), and the instances it takes of each (only the allocations, which not every fill needs, are sorted by
    pool id).
    ``needs``: the instances each of those pools must still have for the fill to be the same again (and the
    shape's live pools what the key says, see the fills); by default what it takes. Parallel lists of integers,
    not pairs: a plan makes thousands of fills.
    """

    __slots__ = ("_allocations", "_cost", "instances", "k", "last", "live", "needs", "notes", "placed", "pools",
                 "short")

    def __init__(self, placed: dict[int, int], short: int, k: dict[int, int],
                 notes: tuple[str, ...] = (), instances: list[int] | None = None) -> None:
        self.placed, self.short, self.notes = placed, short, notes
        self.pools = placed
        # ``instances``: the fill's own count, when it made one (the walk does, in the order it placed)
        self.instances = [-(-units // k[i]) for i, units in placed.items()] if instances is None else instances
        self.k = k  # units an instance, by pool index (the shape's)
        self.needs = self.instances
        self.live = -1  # a water-fill's: the shape's live pools when it was last seen to hold, the last rank read
        self.last = -1
        self._allocations: tuple[Allocation, ...] | None = None
        self._cost: Decimal | None = None

    def valid(self, residual: list[int]) -> bool:
        """Whether every pool the fill relied on still has the instances it relied on."""
        for i, n in zip(self.pools, self.needs):  # noqa: B905, SIM110 (parallel; a loop: faster than all())
            if residual[i] < n:
                return False
        return True

    def allocations(self, purpose: Purpose, table: Columns) -> tuple[Allocation, ...]:
        """The allocations, in pool id order (built once; a fill is for one purpose only).

        Equal allocations are one object in a plan: ``PoolTable.made`` keeps them per purpose and shape (its
        units per instance decide the instances), per pool and by units.
        """
        if self._allocations is None:
            k = self.k
            per_pool = table.made.get((purpose, id(k)))
            if per_pool is None:
                per_pool = table.made[(purpose, id(k))] = [None] * len(table.ids)
            ids, rate, placed = table.ids, table.rate, self.placed
            out = []
            for i in sorted(placed):  # in pool id order: ``tables.Static``'s rows are
                units = placed[i]
                mine = per_pool[i]
                if mine is None:
                    mine = per_pool[i] = {}
                a = mine.get(units)
                if a is None:
                    a = mine[units] = allocation(ids[i], purpose, units, -(-units // k[i]), rate[i])
                out.append(a)
            self._allocations = tuple(out)
        return self._allocations

    def cost(self, table: Columns) -> Decimal:
        """What the placement costs per hour (EUR/h)."""
        if self._cost is None:
            rate, cost = table.rate, Decimal(0)
            for i, n in zip(self.pools, self.instances):  # noqa: B905 (parallel; ``strict=`` costs ~100 ns)
                cost += rate[i] * n
            self._cost = cost
        return self._cost


NOTHING = Placed({}, 0, {})  # no floor to place
