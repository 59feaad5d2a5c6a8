"""Water-filling under caps (ADR-08): the reclaimable part of one workload's claim.

Candidates are ordered by the strategy; each pool takes up to its cap (15 % of the workload's reclaimable
units, 5 % on probation), each correlation group up to 30 %, each hall up to 40 % when the pools span
``Caps.hall_min_halls`` halls or more (a hall is a correlation group beside its aggregates, ADR-06; at two halls
50 %, and what that cap leaves short is placed without it), and the fill keeps back one unit
for every pool still needed to reach eight pools, so a deep pool never crowds out the spread. A second pass tops
up to the caps when later pools could not take their share; what still cannot be placed is shortfall.

Pools whose one instance holds more units than the pool cap come last: the cap would leave such an instance
part-empty at its full rate.

Expected-cost fills (depth-first on a costed shape, ``Shape.weight``) take whole instances: a pool's units are
rounded down to a multiple of what its instance holds before the next pool is read, and only what whole
instances cannot place goes into part-filled ones, in a last pass. Units an instance leaves unused are paid at
its full rate and do no work: the replay through the controller found 4-16 % of a small-unit workload's
reclaimable spend there (a 6-unit pool cap on instances of 4 units: two instances for six units).

Small claims: a share cap never rounds below one unit (a 4-unit claim puts one unit in each of four pools),
except probation, which may round to zero.

The candidates are a shape's pools with capacity left (``tables``). Depth-first and price-first walk the
shape's rank order, built once per plan, and stop as soon as the claim is placed (``_walk``; ``_scan`` when the
last candidates' count matters or the first pass cannot place everything); capacity-optimised and single-cheapest
(baselines) sort the candidates per claim. A depth-first or price-first fill is reused by the next workload of
the shape that asks the same (units, strategy, halls with capacity) while the pools it used still have the room
it took and none it read is among the last candidates (``placed.Placed``).
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

from .model import Caps, Strategy, share_ratio
from .placed import Placed
from .tables import Entry, Order, PoolTable, Shape

__all__ = ["fill", "shared_fill", "whole_instances"]

# the strategies as module names: read in a few nanoseconds, not ~50 as attributes of their class
_DEPTH, _PRICE, _CAPACITY, _SINGLE = (Strategy.DEPTH_FIRST, Strategy.PRICE_FIRST, Strategy.CAPACITY_OPTIMISED,
                                      Strategy.SINGLE_CHEAPEST)


def _share(target: int, share: Decimal, at_least_one: bool) -> int:
    """``floor(target x share)``, in integers (exact, like the ``Decimal`` product of an int and a share)."""
    ratio = share_ratio(share)
    units = target * ratio[0] // ratio[1]
    return max(1, units) if at_least_one else units


def _key(table: PoolTable, strategy: Strategy, cap: int,
         weight: float | None = None) -> Callable[[Entry], tuple[Any, ...]]:
    """The sort key of the water-fill order for ``strategy`` (ties broken by rate, then pool id).

    Depth-first on an expected-cost shape (``weight``: the hours a reclaim costs) sorts by expected cost per
    unit-hour, then pool id.
    """
    rate, score, ids, residual = table.rate, table.score, table.ids, table.residual

    def per_unit(i: int, k: int) -> Decimal:
        return rate[i] / min(k, cap) if cap else rate[i] / k

    if strategy is _DEPTH and weight is not None:
        cost = table.static.cost(weight)
        return lambda e: (cap > 0 and e[1] > cap, cost[e[0]] / (min(e[1], cap) if cap else e[1]), ids[e[0]])
    if strategy is _DEPTH:
        return lambda e: (cap > 0 and e[1] > cap, -score[e[0]], per_unit(*e), ids[e[0]])
    if strategy is _CAPACITY:
        return lambda e: (cap > 0 and e[1] > cap, -(residual[e[0]] * e[1]), per_unit(*e), ids[e[0]])
    return lambda e: (cap > 0 and e[1] > cap, per_unit(*e), -score[e[0]], ids[e[0]])


def _sorted(table: PoolTable, shape: Shape, strategy: Strategy, cap: int, oversize: bool = False) -> list[Entry]:
    """The shape's pools with capacity left (only those bigger than ``cap``: ``oversize``) in fill order."""
    residual = table.residual
    live = [e for e in shape.entries if residual[e[0]] > 0 and (not oversize or e[1] > cap)]
    return sorted(live, key=_key(table, strategy, cap, shape.weight))


def _heads(order: Order, start: dict[tuple[str, int], int], residual: list[int], cut: int,
           max_k: int) -> tuple[list[int], list[int]]:
    """The heads of the lanes that fit ``cut`` units an instance, and those lanes' links.

    A head is the rank of the lane's first pool with capacity left; the heads form a heap.
    """
    heads = []
    split = cut < max_k
    following = order.split() if split else order.next
    entries = order.entries
    for lane, pos in order.first.items():
        if (lane[1] == 0 or lane[1] > cut) if split else lane[1] != 0:
            continue
        pos = start.get(lane, pos)
        while pos >= 0 and residual[entries[pos][0]] <= 0:
            pos = following[pos]
        start[lane] = pos
        if pos >= 0:
            heads.append(pos)
    heapq.heapify(heads)
    return heads, following


def _ranked(table: PoolTable, shape: Shape, strategy: Strategy, pool_cap: int, min_pools: int,
            full: Callable[[str], bool]) -> Iterator[tuple[int, int, int, int]]:
    """The candidates in fill order, each with how many candidates come after it and its rank (-1: unranked).

    That count is exact below ``min_pools - 1`` and ``min_pools - 1`` above it, which is all the fill's
    reserve needs to know (it keeps back at most one unit for each of ``min_pools - 1`` further pools).
    The pools of a hall ``full`` says is full are skipped: a hall that fills stays full for the rest of the
    fill, so its pools would have no room, and the best-ranked pools often sit in one hall.
    """
    if strategy not in (_DEPTH, _PRICE):
        ranked = _sorted(table, shape, strategy, pool_cap)
        for index, (i, k) in enumerate(ranked):
            yield i, k, len(ranked) - index - 1, -1
        return
    horizon = max(0, min_pools - 1)
    order = table.order(shape, strategy is _PRICE)
    residual = table.residual
    over = shape.live_bigger_than(pool_cap)
    after: dict[int, int] = {}
    behind = over
    for i, k in reversed(order.entries):  # the last fitting candidates, when few oversize ones follow
        if behind >= horizon:
            break
        if residual[i] > 0 and k <= pool_cap:
            after[i] = behind
            behind += 1
    start = shape.starts["price" if strategy is _PRICE else "depth"]
    heads, following = _heads(order, start, residual, pool_cap, shape.max_k)
    entries, hall = order.entries, table.hall
    while heads:
        pos = heapq.heappop(heads)
        i, k = entries[pos]
        if full(hall[i]):
            continue
        yield i, k, after.get(i, horizon), pos
        pos = following[pos]
        while pos >= 0 and residual[entries[pos][0]] <= 0:
            pos = following[pos]
        if pos >= 0:
            heapq.heappush(heads, pos)
    if over:
        oversize = _sorted(table, shape, strategy, pool_cap, oversize=True)
        for index, (i, k) in enumerate(oversize):
            yield i, k, min(horizon, len(oversize) - index - 1), -1


def fill(target: int, shape: Shape, strategy: Strategy, caps: Caps, table: PoolTable) -> tuple[dict[int, int], int]:
    """Place ``target`` units on the shape's pools with capacity left: units per pool index, shortfall."""
    placed, short, _, _ = _fill(target, shape, strategy, caps, table)
    return placed, short


def shared_fill(target: int, shape: Shape, strategy: Strategy, caps: Caps, table: PoolTable) -> Placed:
    """``fill``'s result, reused from an earlier workload of the plan when it would be the same.

    Residual capacity must only have shrunk (``PoolTable.take``) since the fills the shape keeps were made.
    """
    if strategy is not _DEPTH and strategy is not _PRICE:
        placed, short, _, instances = _fill(target, shape, strategy, caps, table)
        return Placed(placed, short, shape.k, instances=instances)
    price = strategy is _PRICE
    key = (target, shape.halls)  # and the strategy: the shape keeps a depth-first and a price-first memo
    fills = shape.fills[price]
    done = fills.get(key)
    if done is not None and done.valid(table.residual) and (
            done.live == shape.live or _clear_of_tail(done, target, shape, strategy, caps, table)):
        return done
    # the walk at once when this plan has the caps of ``target`` already (``_fill`` otherwise, or when the walk
    # cannot place it all)
    limits = table.limits.get(key) if target > 0 else None
    walked = None if limits is None else _walk(target, shape, price, limits, table)
    placed, short, last, instances = walked or _fill(target, shape, strategy, caps, table)
    done = Placed(placed, short, shape.k, (), instances)
    if last >= 0:
        done.live, done.last = shape.live, last
        fills[key] = done
    return done


def _clear_of_tail(done: Placed, target: int, shape: Shape, strategy: Strategy, caps: Caps,
                   table: PoolTable) -> bool:
    """Whether the candidates ``done`` read are still none of the last ``min_pools - 1`` (pools ran out since)."""
    horizon = max(0, caps.min_pools - 1)
    if shape.live - done.last - 1 >= horizon:  # at least that many live pools rank after the last one it read
        done.live = shape.live
        return True
    pool_cap = _share(target, caps.pool_share, True)
    behind = shape.live_bigger_than(pool_cap)
    entries, residual = table.order(shape, strategy is _PRICE).entries, table.residual
    pos = len(entries) - 1
    while behind < horizon:
        if pos <= done.last:
            return False
        i, k = entries[pos]
        if residual[i] > 0 and k <= pool_cap:
            behind += 1
        pos -= 1
    done.live = shape.live
    return True


def _caps(target: int, shape: Shape, strategy: Strategy, caps: Caps) -> tuple[int, int, int, int, int]:
    """Pool, group, hall and probation caps and the pools to reach, for ``target`` units."""
    if strategy is _SINGLE:
        pool_cap, group_cap, min_pools, hall_cap = target, target, 1, target
    else:
        pool_cap = _share(target, caps.pool_share, True)
        group_cap = _share(target, caps.group_share, True)
        min_pools = caps.min_pools
        hall_cap = caps.hall_cap(target, shape.halls)[0]  # a small claim may still need ceil(target / halls)
    return pool_cap, group_cap, hall_cap, _share(target, caps.probation_share, False), min_pools


def whole_instances(shape: Shape, strategy: Strategy) -> bool:
    """Whether a fill takes whole instances first: expected cost, which fills a costed shape depth-first."""
    return shape.weight is not None and strategy is _DEPTH


def _whole(done: int, units: int, k: int) -> int:
    """``units`` more in a pool holding ``done``, less what would leave its last instance part-filled.

    Not below one instance: with ``k`` or fewer in all, a part-filled instance is the only way to place them.
    """
    total = done + units
    return units if total <= k else total - total % k - done


def _fill(target: int, shape: Shape, strategy: Strategy, caps: Caps,
          table: PoolTable) -> tuple[dict[int, int], int, int, list[int] | None]:
    """The fill, the last rank it read when another fill may reuse it (else -1), the instances it counted.

    The instances it takes of each pool come when the fill counted them (``_walk``), else None. Another fill of
    the same target may reuse it when the first pass placed everything before the last ``min_pools - 1``
    candidates (the only ones whose reserve depends on the pools after them): then what it placed depends on the
    pools it read (their order, which the shape's live hall count and pools that ran out decide, and their
    capacity) and nothing else.
    """
    if target <= 0:
        return {}, 0, -1, None
    key = (target, shape.halls, True) if strategy is _SINGLE else (target, shape.halls)
    limits = table.limits.get(key)
    if limits is None:
        limits = table.limits[key] = _caps(target, shape, strategy, caps)
    if strategy is _DEPTH or strategy is _PRICE:
        walked = _walk(target, shape, strategy is _PRICE, limits, table)
        if walked is not None:
            return walked
    lift = strategy is not _SINGLE and caps.hall_cap(target, shape.halls)[1]
    return (*_scan(target, shape, strategy, limits, table, lift), None)


def _walk(target: int, shape: Shape, price_first: bool, limits: tuple[int, int, int, int, int],
          table: PoolTable) -> tuple[dict[int, int], int, int, list[int]] | None:
    """Depth-first and price-first when the first pass places everything (else None, and ``_scan`` does it).

    The same walk as ``_scan`` without what only its last candidates need: it merges the lanes of the pools that
    fit the pool cap (``_heads``), skips a hall at its cap, and stops as soon as the claim is placed. A candidate
    has at least ``live - rank - 1`` fitting candidates with capacity after it, so while that is ``min_pools - 1``
    or more its reserve does not depend on them (``_ranked`` counts the last ones exactly: the walk leaves
    those to ``_scan``). Every pool is read once, so none holds units yet.
    """
    pool_cap, group_cap, hall_cap, probation_cap, min_pools = limits
    whole = not price_first and whole_instances(shape, _DEPTH)
    order = shape.orders.get("price" if price_first else "depth") or table.order(shape, price_first)
    residual, group, probation, live = table.residual, table.static.group_no, table.probation, shape.live
    cut = pool_cap if pool_cap < shape.max_k else shape.max_k  # min(), without a builtin's call
    entries, hall, pop, replace = order.entries, table.static.hall_no, heapq.heappop, heapq.heapreplace
    built = shape.heaps.get((price_first, cut))
    if built is None or built[0] != live:
        built = _lane_heads(shape, order, price_first, cut, pool_cap, residual, built)
    heads, following = list(built[1]), built[2]
    placed: dict[int, int] = {}
    instances: list[int] = []  # of each pool placed, in the same order
    group_used = [0] * table.static.groups  # units per correlation group and per hall, by their numbers
    hall_used = [0] * table.static.halls
    remaining, need = target, min_pools - 1  # units to place; pools wanted after the next one (1 unit each)
    # ranks after ``beyond`` may have too few candidates after them: live - max(0, min_pools - 1) - 1
    beyond = live - min_pools if min_pools > 1 else live - 1
    while heads:
        pos = heads[0]  # the next candidate: popped, or replaced by its lane's next, below
        i, k = entries[pos]
        h = hall[i]
        in_hall = hall_used[h]
        if in_hall >= hall_cap:
            pop(heads)
            continue
        if pos > beyond:
            return None
        g = group[i]
        in_group = group_used[g]
        units = probation_cap if probation[i] else pool_cap  # the least of the caps, the room and the reserve
        if group_cap - in_group < units:
            units = group_cap - in_group
        if hall_cap - in_hall < units:
            units = hall_cap - in_hall
        if residual[i] * k < units:
            units = residual[i] * k
        if need >= remaining:
            if units > 1:
                units = 1
        elif need > 0 and remaining - need < units:
            units = remaining - need
        elif remaining < units:
            units = remaining
        if whole and units > k:   # whole instances: the units a last part-filled instance would leave unused
            units -= units % k
        if units > 0:
            need -= 1
            placed[i] = units
            instances.append(-(-units // k))
            group_used[g] = in_group + units
            hall_used[h] = in_hall + units
            remaining -= units
            if remaining == 0:
                return placed, 0, pos, instances
        pos = following[pos]
        while pos >= 0 and residual[entries[pos][0]] <= 0:
            pos = following[pos]
        if pos >= 0:
            replace(heads, pos)  # one sift instead of a pop's and a push's
        else:
            pop(heads)
    return None


def _lane_heads(shape: Shape, order: Order, price_first: bool, cut: int, pool_cap: int, residual: list[int],
                built: tuple[int, list[int], list[int]] | None) -> tuple[int, list[int], list[int]]:
    """The heads of the lanes a walk of ``cut`` merges, as the shape keeps them (``built``) while none ran out.

    Built from the lanes' first pools with capacity when the shape has none; when a pool ran out since, the
    heads that did move on in their lanes (a lane never revives).
    """
    live = shape.live
    if built is None:
        built = (live, *_heads(order, shape.starts["price" if price_first else "depth"], residual, pool_cap,
                               shape.max_k))
    else:
        entries, following, heads = order.entries, built[2], []
        for pos in built[1]:
            while pos >= 0 and residual[entries[pos][0]] <= 0:
                pos = following[pos]
            if pos >= 0:
                heads.append(pos)
        heapq.heapify(heads)
        built = (live, heads, following)
    shape.heaps[(price_first, cut)] = built
    return built


def _scan(target: int, shape: Shape, strategy: Strategy, limits: tuple[int, int, int, int, int],
          table: PoolTable, lift: bool = False) -> tuple[dict[int, int], int, int]:
    """The fill over every candidate (``_ranked``), with the second pass.

    ``lift``: the hall cap is only a preference, and a third pass tops up without it.
    """
    pool_cap, group_cap, hall_cap, probation_cap, min_pools = limits
    residual, probation, group, hall = table.residual, table.probation, table.group, table.hall
    whole = whole_instances(shape, strategy)
    placed: dict[int, int] = {}
    group_used: dict[str, int] = defaultdict(int)
    hall_used: dict[str, int] = defaultdict(int)
    remaining, used, horizon = target, 0, max(0, min_pools - 1)
    tail, last = False, -1  # whether a candidate among the last min_pools - 1 was read; the last rank read

    # pass 1: in rank order, keeping one unit back for each further pool needed to reach min_pools (a pool in
    # a hall already at its cap has no room: the walk skips it)
    seen: list[Entry] = []
    for i, k, after, pos in _ranked(table, shape, strategy, pool_cap, min_pools,
                                    lambda h: hall_used[h] >= hall_cap):
        seen.append((i, k))
        tail = tail or after < horizon or pos < 0
        last = max(last, pos)
        reserve = min(max(0, min_pools - used - 1), after, remaining - 1)
        g, h, done = group[i], hall[i], placed.get(i, 0)
        units = min((probation_cap if probation[i] else pool_cap) - done, group_cap - group_used[g],
                    hall_cap - hall_used[h], residual[i] * k - done, remaining - reserve)
        if whole:
            units = _whole(done, units, k)
        if units > 0:
            used += done == 0
            placed[i] = done + units
            group_used[g] += units
            hall_used[h] += units
            remaining -= units
        if remaining == 0:
            return placed, 0, -1 if tail else last
    # pass 2: top up to the caps in rank order (pass 1 read every candidate that could have room, or nothing
    # is left to place); pass 3, where the hall cap is a preference: the same without it
    passes: list[tuple[int, list[Entry] | None]] = [(hall_cap, seen), (target, None)] if lift else [(hall_cap, seen)]
    # whole instances first, where the shape asks for them; what they leave is placed in part-filled ones after
    for cap, order, rounded in [(c, o, True) for c, o in passes if whole] + [(c, o, False) for c, o in passes]:
        # pass 3 reads every candidate in rank order (``None``: sorted only when reached)
        for i, k in order if order is not None else _sorted(table, shape, strategy, pool_cap):
            if remaining == 0:
                break
            g, h, done = group[i], hall[i], placed.get(i, 0)
            units = min((probation_cap if probation[i] else pool_cap) - done, group_cap - group_used[g],
                        cap - hall_used[h], residual[i] * k - done, remaining)
            if rounded:
                units = _whole(done, units, k)
            if units > 0:
                placed[i] = done + units
                group_used[g] += units
                hall_used[h] += units
                remaining -= units
    return placed, remaining, -1
