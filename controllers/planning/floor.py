"""The floor (ADR-22): a share of the claim on guaranteed capacity.

It comes from the business unit's committed reservations first and on-demand guaranteed capacity after, spread
over at least three halls with no hall above 40 %. Units are placed one at a time in the hall with the fewest
floor units that still has room, which is the spread that keeps the most of the floor through the loss of any
one hall.

The candidates are a guaranteed shape's pools with capacity left (``tables``), in the shape's per-hall
preference order (committed before on-demand, then cheapest rate per unit, then pool id). Every pool read
while looking for a hall's next pool with room is part of the result, with zero units when it got none (as
the planner has always recorded it).
"""

from __future__ import annotations

import math
from decimal import Decimal

from .model import Caps
from .tables import PoolTable, Shape

__all__ = ["fill_floor"]


def fill_floor(units: int, shape: Shape, caps: Caps, table: PoolTable) -> tuple[dict[int, int], int, list[str]]:
    """Returns units per pool index, the shortfall and notes (e.g. a floor too small to spread)."""
    notes: list[str] = []
    if units <= 0:
        return {}, 0, notes
    halls = shape.halls_alive()
    hall_cap = max(1, math.floor(Decimal(units) * caps.floor_hall_share))
    if len(halls) < caps.floor_min_halls:
        notes.append(f"guaranteed capacity fitting this unit exists in {len(halls)} hall(s), fewer than "
                     f"{caps.floor_min_halls}; the floor is not spread")
        hall_cap = units
    elif units < caps.floor_min_halls:
        notes.append(f"a floor of {units} unit(s) cannot span {caps.floor_min_halls} halls")
    residual = table.residual
    placed: dict[int, int] = {}
    per_hall = dict.fromkeys(halls, 0)
    at = dict.fromkeys(halls, 0)

    def head(hall: str) -> int:
        """Position of the hall's first pool with room (len when none), recording every pool read."""
        entries, j = shape.by_hall[hall], at[hall]
        while j < len(entries):
            i, k = entries[j]
            if residual[i] > 0 and placed.setdefault(i, 0) < residual[i] * k:
                break
            j += 1
        at[hall] = j
        return j

    remaining = units
    while remaining:
        best = second = None
        for h in halls:
            if per_hall[h] < hall_cap and head(h) < len(shape.by_hall[h]):
                if best is None or per_hall[h] < per_hall[best]:
                    best, second = h, best
                elif second is None or per_hall[h] < per_hall[second]:
                    second = h
        if best is None:
            break
        i, k = shape.by_hall[best][at[best]]
        # the units one at a time would go here until the pool fills, the hall reaches its cap, or another
        # hall has fewer floor units (ties to the first hall by name): place them at once
        run = min(remaining, residual[i] * k - placed[i], hall_cap - per_hall[best])
        if second is not None:
            run = min(run, per_hall[second] - per_hall[best] + (1 if best < second else 0))
        placed[i] += run
        per_hall[best] += run
        remaining -= run
    return placed, remaining, notes
