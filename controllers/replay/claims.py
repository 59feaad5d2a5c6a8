"""Claims sized to what the region lends: a replay claim no larger than its shape's free capacity.

The replay gives every workload the same claim (``--units``, 40 by default), which says nothing about what the
region can lend a given unit shape. Some shapes it lends almost none of: the simulated region's reclaimable GPU
pools have 3–6 slots each, 55 % held by other tenants, so a 1-GPU unit finds a median of ~6 units free and none
at all 5 % of the time. A 40-unit claim of that shape is short by construction whatever the strategy, and its
shortfall says nothing about placement. So before the replay each claim is held to what the warm-up history
shows the region had free for the shape at its 5th percentile (``QUANTILE``); a shape the region lends nothing
of at that percentile is refused, as the compiler's feasibility check would refuse it against the catalogue's
real capacity, and its workload belongs on guaranteed capacity. Both are printed with the figures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from contracts.pools import PurchaseModel
from contracts.schema import Contract

from ..planning import units_per_instance
from .trace import Trace

__all__ = ["QUANTILE", "SizedClaim", "size_claims"]

QUANTILE = 0.05


@dataclass(frozen=True)
class SizedClaim:
    """One workload's claim: what was asked, what the replay claims, and the shape's free capacity."""

    workload: str
    asked: int
    units: int
    free_low: int      # units of the shape free at QUANTILE over the history before the replay
    free_median: int

    @property
    def note(self) -> str:
        """Empty when the claim stands; else why it was held or refused."""
        if self.units == self.asked:
            return ""
        verb = "refused (FEAS: no reclaimable capacity of its shape)" if self.units == 0 else f"held to {self.units}"
        return (f"{self.workload}: {self.asked} units asked, {verb}; the region had {self.free_low} unit(s) of its "
                f"shape free at p{round(QUANTILE * 100)} and {self.free_median} at the median")


def _quantile(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[math.floor(q * (len(ordered) - 1))] if ordered else 0


def size_claims(trace: Trace, contracts: Iterable[Contract], units: dict[str, int] | int) -> list[SizedClaim]:
    """Each workload's claim held to its shape's free capacity at ``QUANTILE`` over the warm-up (the whole
    trace when it has no warm-up); without the region's free figures every claim stands."""
    history = [free for t, free in trace.free if t < trace.start] or [free for _, free in trace.free]
    out = []
    for c in sorted(contracts, key=lambda c: c.workload):
        asked = units if isinstance(units, int) else units.get(c.workload, 0)
        fitting = [(p.pool_id, k) for p in trace.pools if p.purchase_model is PurchaseModel.RECLAIMABLE
                   and p.region == c.region and p.fits(c) and (k := units_per_instance(p, c)) > 0]
        series = [sum(free.get(pid, 0) * k for pid, k in fitting) for free in history]
        if not series:
            out.append(SizedClaim(c.workload, asked, asked, asked, asked))
            continue
        low, median = _quantile(series, QUANTILE), _quantile(series, 0.5)
        out.append(SizedClaim(c.workload, asked, min(asked, low), low, median))
    return out
