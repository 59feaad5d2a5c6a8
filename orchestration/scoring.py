"""The pool score (ADR-07, ADR-08): pure functions from a pool's inputs to a composite score and a ranking.

Inputs per pool: the rate card (rate and guaranteed rate), the 30-day interruption rate (reclaims per 100
instance-hours, drills excluded), the mean time between interruptions, forward capacity (expected free share
of the pool) and the project's quota headroom. The formula and its weights live in ``contracts.scoring``
(the planner falls back on the same one): depth and calm outweigh price (0.4 / 0.4 / 0.2); quota headroom
scales the whole score. Every score lies in [0, 1], higher is better.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields

from contracts.scoring import WEIGHTS, WORST_INTERRUPTION_PCT_H, composite_score, price_ratio

__all__ = ["WEIGHTS", "WORST_INTERRUPTION_PCT_H", "PoolInputs", "RankedPool", "interruption_stats", "rank_pools",
           "score"]



@dataclass(frozen=True)
class PoolInputs:
    """Everything a score depends on: stored with the ranking so it can be replayed (ADR-07)."""

    pool: str
    rate_eur_h: float
    guaranteed_rate_eur_h: float
    interruption_rate_pct_h: float      # reclaims per 100 instance-hours over the window, drills excluded
    mean_time_between_h: float | None   # window hours ÷ reclaims; None when nothing was reclaimed
    forward_share: float                # expected free instances ÷ pool capacity, 0..1
    quota_headroom: float = 1.0         # share of the wanted launches the project quota still allows, 0..1
    reclaims: int = 0
    instance_hours: float = 0.0

    def as_dict(self) -> dict[str, object]:
        """The inputs by name, as stored beside the score (every field a scalar: no deep copy, which
        ``dataclasses.asdict`` makes and which was most of publishing a ranking)."""
        return {name: getattr(self, name) for name in _INPUT_FIELDS}


_INPUT_FIELDS = tuple(f.name for f in fields(PoolInputs))


@dataclass(frozen=True)
class RankedPool:
    pool: str
    rank: int
    score: float
    discount: float
    inputs: PoolInputs


def score(inputs: PoolInputs) -> float:
    """Composite score in [0, 1] (``contracts.scoring.composite_score``)."""
    return composite_score(inputs.forward_share, inputs.interruption_rate_pct_h,
                           price_ratio(inputs.rate_eur_h, inputs.guaranteed_rate_eur_h),
                           quota_headroom=inputs.quota_headroom)


def rank_pools(inputs: Iterable[PoolInputs]) -> list[RankedPool]:
    """Best first; ties broken by pool id so the ranking is deterministic."""
    scored = [(score(i), i) for i in inputs]
    scored.sort(key=lambda si: (-si[0], si[1].pool))
    out = []
    for n, (s, i) in enumerate(scored, start=1):
        discount = 1.0 - i.rate_eur_h / i.guaranteed_rate_eur_h if i.guaranteed_rate_eur_h > 0 else 0.0
        out.append(RankedPool(i.pool, n, s, round(discount, 6), i))
    return out


def interruption_stats(reclaims: Mapping[str, int], instance_hours: Mapping[str, float],
                       window_h: float) -> dict[str, tuple[float, float | None]]:
    """Per pool: (reclaims per 100 instance-hours, mean hours between reclaims) over a window.

    A pool with no instance-hours gets rate 0 (nothing observed); callers keep ``reclaims`` and
    ``instance_hours`` beside the rate so a thin sample is visible in the stored inputs.
    """
    out: dict[str, tuple[float, float | None]] = {}
    for pool in set(reclaims) | set(instance_hours):
        n = reclaims.get(pool, 0)
        hours = instance_hours.get(pool, 0.0)
        rate = 100.0 * n / hours if hours > 0 else 0.0
        out[pool] = (round(rate, 6), round(window_h / n, 6) if n else None)
    return out
