"""A composite pool score for when no ranking is in force yet (tests, benchmarks, the compiler's replay).

The analytics publish the ranking in force (issue 7); this is the same shape of formula: forward capacity and
observed interruption outweigh rate (ADR-08) — weights 0.4 / 0.4 / 0.2, each input normalised to 0..1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from contracts.pools import Pool

from .model import PoolState

__all__ = ["composite_score", "pool_states"]


def composite_score(forward_share: float, interruption_pct_h: float, price_ratio: float,
                    worst_interruption_pct_h: float = 10.0) -> float:
    """Score a pool in 0..1 from depth, calm and price; higher is better.

    ``forward_share``: forecast free capacity as a share of the pool (0..1); ``price_ratio``: rate ÷
    guaranteed rate; ``interruption_pct_h`` is capped at ``worst_interruption_pct_h`` (%/h).
    """
    depth = min(1.0, max(0.0, forward_share))
    calm = 1.0 - min(1.0, max(0.0, interruption_pct_h / worst_interruption_pct_h))
    cheap = 1.0 - min(1.0, max(0.0, price_ratio))
    return round(0.4 * depth + 0.4 * calm + 0.2 * cheap, 6)


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
