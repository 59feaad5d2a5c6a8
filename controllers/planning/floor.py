"""The floor (ADR-22): a share of the claim on guaranteed capacity.

It comes from the business unit's committed reservations first and on-demand guaranteed capacity after, spread
over at least three halls with no hall above 40 %. Units are placed one at a time in the hall with the fewest
floor units that still has room, which is the spread that keeps the most of the floor through the loss of any
one hall.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from contracts.pools import PurchaseModel

from .model import Caps, PoolState

__all__ = ["FloorCandidate", "fill_floor"]


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
    ranked = sorted(candidates, key=FloorCandidate.preference)
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
