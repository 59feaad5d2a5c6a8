"""A composite pool score for when no ranking is in force yet (tests, benchmarks, the compiler's replay).

The analytics publish the ranking in force with the same formula, ``contracts.scoring.composite_score``:
forward capacity and observed interruption outweigh rate (ADR-08), each input normalised to 0..1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from contracts.pools import Pool
from contracts.scoring import composite_score

from .model import PoolState

__all__ = ["composite_score", "pool_states"]


def pool_states(pools: Iterable[Pool], available: Mapping[str, int], capacity: Mapping[str, int] | None = None,
                excluded: Iterable[str] = (), probation: Iterable[str] = ()) -> list[PoolState]:
    """Pool states with the composite score; ``capacity`` (total instances) defaults to ``available``."""
    out = []
    excluded_set, probation_set = set(excluded), set(probation)
    for p in pools:
        free = available.get(p.pool_id, 0)
        total = (capacity or available).get(p.pool_id, free) or 1
        score = composite_score(free / total, float(p.interruption_rate_pct_h), float(p.discount_ratio))
        out.append(PoolState(p, free, score=score, excluded=p.pool_id in excluded_set,
                             probation=p.pool_id in probation_set))
    return out
