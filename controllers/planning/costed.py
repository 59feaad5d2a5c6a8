"""Expected-cost placement (ADR-08 as a price on risk): the reclaimable part of a claim at the least expected cost.

Each pool's units are ranked by expected cost per unit-hour, its rate plus P(reclaim within 1 h) times what a
reclaim costs *this* workload (``risk``), and water-filled under ADR-06's caps like any other order. A workload
that loses little to a reclaim (a final write on notice, a short drain) ranks nearly by price; one that loses
much (a long requeued unit, a long periodic interval) pays for calm pools.

The contract's tolerance (``max_interruption_rate_pct_h``) bounds the fill's expected reclaims: when the
cheapest-expected fill would be reclaimed faster than that, the weight of a reclaim is raised (×4 a step, three
steps) until the fill is within it; none within it: the least reclaimed of them, with a note. So depth is
bought, and ADR-08's premium recorded against price-first, where a contract's own figures ask for it.
"""

from __future__ import annotations

from contracts.schema import Contract

from .model import Caps, Strategy
from .placed import Placed
from .risk import expected_rate_pct_h, weight_of
from .tables import PoolTable, Shape
from .waterfill import shared_fill

__all__ = ["STEPS", "costed_fill"]

STEPS = (1.0, 4.0, 16.0, 64.0)  # the weights of a reclaim tried in turn, as multiples of the contract's own

def costed_fill(target: int, contract: Contract, table: PoolTable,
                caps: Caps) -> tuple[Shape, Placed, tuple[str, ...]]:
    """The fill of ``target`` units at the least expected cost within the contract's tolerance.

    Returns the shape used, the fill, and a note when no fill is within the tolerance. Nothing is taken from
    ``table``: the caller takes what it keeps.
    """
    base = weight_of(contract)
    tolerance = float(contract.max_interruption_rate_pct_h)
    r, e, partition = contract.resources, contract.eligible, contract.partition
    best: tuple[float, Shape, Placed] | None = None
    for step in STEPS:
        shape = table.reclaimable_at(r, e, partition, contract, base * step)
        placed = shared_fill(target, shape, Strategy.DEPTH_FIRST, caps, table)
        if shape.max_rate_pct_h <= tolerance:  # no pool of the shape is reclaimed faster than the tolerance
            return shape, placed, ()
        rate = expected_rate_pct_h(placed.placed, table.static.reclaim_p)
        if rate <= tolerance or base <= 0:
            return shape, placed, ()
        if best is None or rate < best[0]:
            best = (rate, shape, placed)
    assert best is not None
    rate, shape, placed = best
    return shape, placed, (f"expected {rate:.2f} %/h reclaimed, above the contract's tolerance of {tolerance:g} "
                           "%/h: no placement within the caps found calmer",)
