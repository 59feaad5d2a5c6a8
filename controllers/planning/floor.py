"""The floor (ADR-22): a share of the claim on guaranteed capacity.

It comes from the business unit's committed reservations first and on-demand guaranteed capacity after, spread
over at least three halls with no hall above 40 % — where a spread can keep it: a floor of 4 or 7 units over
three halls cannot (any spread puts 2 of 4 or 3 of 7 in one hall), so it takes the least it must, ceil(units /
halls) a hall, and says so; leaving the floor a unit short instead would keep less guaranteed capacity at every
moment and the same after the loss of the fullest hall. Units are placed one at a time in the hall with the fewest
floor units that still has room, which is the spread that keeps the most of the floor through the loss of any
one hall.

The candidates are a guaranteed shape's pools with capacity left (``tables``), in the shape's per-hall
preference order (committed before on-demand, then cheapest rate per unit, then pool id). Every pool read
while looking for a hall's next pool with room is part of the result, with zero units when it got none (as
the planner has always recorded it).

A floor is decided by its units, the halls where the shape has capacity and the pools it reads; while each pool
it placed units in (or read) holds more than it placed, the next floor of the same units places the same: the
plan reuses it (``placed.Placed``).
"""

from __future__ import annotations

from decimal import Decimal

from .model import Caps, share_ratio
from .placed import Placed
from .tables import PoolTable, Shape

__all__ = ["fill_floor", "shared_floor"]


def fill_floor(units: int, shape: Shape, caps: Caps, table: PoolTable) -> tuple[dict[int, int], int, list[str]]:
    """Units per pool index, the shortfall and notes (e.g. a floor too small to spread), computed afresh.

    For callers that change residual capacity other than by taking it (setting capacity aside for a while):
    ``shared_floor`` reuses a floor only while capacity only shrinks.
    """
    return _fill(units, shape, caps, table)


def shared_floor(units: int, shape: Shape, caps: Caps, table: PoolTable) -> Placed:
    """``fill_floor``'s result, reused from an earlier workload of the plan when it would be the same.

    Residual capacity must only have shrunk (``PoolTable.take``) since the floors the shape keeps were made.
    """
    key = (units, shape.halls)
    done = shape.floors.get(key)
    if done is not None and done.valid(table.residual):
        return done
    placed, short, notes = _fill(units, shape, caps, table)
    done = Placed(placed, short, shape.k, tuple(notes))
    # the same again while every pool read holds more than it placed there: none filled, none ran out
    done.needs = [placed[i] // shape.k[i] + 1 for i in done.pools]
    shape.floors[key] = done
    return done


def _fill(units: int, shape: Shape, caps: Caps, table: PoolTable) -> tuple[dict[int, int], int, list[str]]:
    notes: list[str] = []
    if units <= 0:
        return {}, 0, notes
    halls = shape.halls_alive()
    share = share_ratio(caps.floor_hall_share)
    hall_cap = max(1, units * share[0] // share[1])  # floor(units x share), in integers (exact)
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
    residual = table.residual
    spread = _round_robin(units, halls, hall_cap, shape, table)
    if spread is not None:
        return spread, 0, notes
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
        open_halls = [h for h in halls if per_hall[h] < hall_cap and head(h) < len(shape.by_hall[h])]
        if not open_halls:
            break
        rounds = _level_rounds(open_halls, shape, at, placed, residual, per_hall, hall_cap, remaining)
        if rounds:  # open halls level: one unit each in name order, ``rounds`` times, changes nothing else
            for h in open_halls:
                placed[shape.by_hall[h][at[h]][0]] += rounds
                per_hall[h] += rounds
            remaining -= rounds * len(open_halls)
            continue
        best = min(open_halls, key=lambda h: (per_hall[h], h))
        i, k = shape.by_hall[best][at[best]]
        # the units one at a time would go here until the pool fills, the hall reaches its cap, or another
        # hall has fewer floor units (ties to the first hall by name): place them at once
        run = min(remaining, residual[i] * k - placed[i], hall_cap - per_hall[best])
        others = [(per_hall[h], h) for h in open_halls if h != best]
        if others:
            level, second = min(others)
            run = min(run, level - per_hall[best] + (1 if best < second else 0))
        placed[i] += run
        per_hall[best] += run
        remaining -= run
    return placed, remaining, notes


def _level_rounds(open_halls: list[str], shape: Shape, at: dict[str, int], placed: dict[int, int],
                  residual: list[int], per_hall: dict[str, int], hall_cap: int, remaining: int) -> int:
    """Whole rounds of one unit per open hall that overfill no pool and pass no hall cap (0 unless level).

    They leave a unit to place: a pool that fills in the last round must still be seen to have filled by the
    next look at its hall, as it would have been one unit at a time.
    """
    level = per_hall[open_halls[0]]
    if len(open_halls) < 2 or any(per_hall[h] != level for h in open_halls):
        return 0
    rounds = min((remaining - 1) // len(open_halls), hall_cap - level)
    for h in open_halls:
        i, k = shape.by_hall[h][at[h]]
        rounds = min(rounds, residual[i] * k - placed[i])
    return rounds


def _round_robin(units: int, halls: list[str], hall_cap: int, shape: Shape,
                 table: PoolTable) -> dict[int, int] | None:
    """The floor when each hall's share fits one pool with room to spare (else None).

    One unit at a time, each to the hall with the fewest floor units (ties to the first by name), is a round
    robin over the halls in name order: ``units // halls`` each and one more for the first ``units % halls``.
    While no share passes the hall cap and none fills its pool, nothing else happens: each hall's share goes to
    one pool (``_hall_pool``), recorded with zero units when the share is zero.
    """
    if not halls:
        return None
    each, more = divmod(units, len(halls))
    placed: dict[int, int] = {}
    for n, hall in enumerate(halls):
        share = each + 1 if n < more else each
        if share > hall_cap:
            return None
        chosen = _hall_pool(shape.by_hall[hall], share, table)
        if chosen is None:
            return None
        if chosen >= 0:
            placed[chosen] = share
    return placed


def _hall_pool(entries: list[tuple[int, int]], share: int, table: PoolTable) -> int | None:
    """The pool that holds a hall's ``share`` of the floor for the least.

    Among the pools of the first purchase model with capacity left (committed reservations before on-demand,
    ADR-22): the fewest euros an hour for the whole instances the share needs (a share of 4 units in an instance
    of 8 pays for 8; a 4-unit instance at the same rate per unit costs half), then the hall's preference order.
    None: the first such pool with capacity has no room to spare for the share (the unit-at-a-time fill
    decides); -1: no pool has capacity.
    """
    residual, committed, rate = table.residual, table.static.committed, table.rate
    first: int | None = None
    best, best_cost = -1, Decimal(0)
    for i, k in entries:
        if residual[i] <= 0:
            continue
        if first is None:
            first = i
            if share >= residual[i] * k:
                return None
        elif committed[i] != committed[first]:
            break
        if share >= residual[i] * k:
            continue
        cost = rate[i] * -(-share // k)
        if best < 0 or cost < best_cost:
            best, best_cost = i, cost
    return best
