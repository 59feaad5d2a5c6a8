"""The composite pool score (ADR-07, ADR-08): one formula for the analytics' ranking and the planner's fallback.

Depth (forecast free share of the pool) and calm (few interruptions) outweigh price: weights 0.4 / 0.4 / 0.2,
each input normalised to [0, 1]; the project's quota headroom scales the whole score, because capacity the
project cannot launch is not depth. Every score lies in [0, 1], higher is better, rounded to six places.

Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType

__all__ = ["FULL", "RECLAIM", "WEIGHTS", "WORST_INTERRUPTION_PCT_H", "clamp01", "composite_score", "full_pool_share",
           "price_ratio", "without_depth"]

# The causes of a pool's exclusion, as the controller's exclusion watcher writes them and the ranking reads them
FULL = "full"          # launches refused: closed to new units, held units stay; no depth until room is seen again
RECLAIM = "reclaim"    # the pool is being reclaimed: units move away

WEIGHTS: Mapping[str, float] = MappingProxyType({"depth": 0.4, "calm": 0.4, "cheap": 0.2})
WORST_INTERRUPTION_PCT_H = 10.0  # at or above this rate a pool earns nothing for calm


def clamp01(x: float) -> float:
    """``x`` held to [0, 1]."""
    return min(1.0, max(0.0, x))


def price_ratio(rate_eur_h: float, guaranteed_rate_eur_h: float) -> float:
    """Rate ÷ guaranteed rate; 1 (no discount) when the guaranteed rate is unknown (0)."""
    return rate_eur_h / guaranteed_rate_eur_h if guaranteed_rate_eur_h > 0 else 1.0


def composite_score(forward_share: float, interruption_pct_h: float, price_ratio: float,
                    worst_interruption_pct_h: float = WORST_INTERRUPTION_PCT_H, quota_headroom: float = 1.0) -> float:
    """The score in [0, 1] of a pool.

    Args:
        forward_share: forecast free capacity as a share of the pool (0..1).
        interruption_pct_h: reclaims per 100 instance-hours, drills excluded.
        price_ratio: rate ÷ guaranteed rate.
        worst_interruption_pct_h: the rate at or above which a pool earns nothing for calm.
        quota_headroom: share of the wanted launches the project quota still allows (0..1).
    """
    depth = clamp01(forward_share)
    calm = 1.0 - clamp01(interruption_pct_h / worst_interruption_pct_h)
    cheap = 1.0 - clamp01(price_ratio)
    raw = WEIGHTS["depth"] * depth + WEIGHTS["calm"] * calm + WEIGHTS["cheap"] * cheap
    return round(raw * clamp01(quota_headroom), 6)


def full_pool_share(forward_share: float, *, full_since: datetime | None, card_at: datetime | None,
                    free_now: int) -> float:
    """The depth input of a pool whose launches were refused: zero until its room is seen again.

    ``full_since``: when the pool was excluded with cause ``full`` (None: it is not, the share stands). Its room
    is seen again on a rate card taken after the refusals (``card_at``) that shows free instances (``free_now``).
    A card as old as the refusals or older still counts the room the tenants who filled the pool have taken (the
    card is up to 5 min old), so its share is not believed.
    """
    if full_since is None:
        return forward_share
    if card_at is not None and card_at > full_since and free_now > 0:
        return forward_share
    return 0.0


def without_depth(score: float, forward_share: float, quota_headroom: float = 1.0) -> float:
    """``score`` (a ``composite_score``) less its depth term: the score of the same pool at zero depth."""
    depth = WEIGHTS["depth"] * clamp01(forward_share) * clamp01(quota_headroom)
    return round(max(0.0, score - depth), 6)
