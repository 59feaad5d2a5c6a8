"""A reclaim trace: what the replay simulator replays (ADR-03's "30 days of pool history").

A trace holds the pools, how many instances each can lend, and every reclaim wave in time order: the share
of the pool's reclaimable instances taken, whether a notice came, and how long the pool then lends less.
The simulated region writes traces (``from_region``); tests build small ones by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from contracts.pools import Pool

__all__ = ["Reclaim", "Trace"]


@dataclass(frozen=True)
class Reclaim:
    time: datetime
    pool_id: str
    share: float                  # share of the pool's reclaimable instances taken, 0..1 (1.0 = hall-wide)
    no_notice_share: float = 0.0  # share of the victims that got no notice
    hold: timedelta = timedelta(hours=2)  # how long the taken capacity stays with the guaranteed tenant
    drill: bool = False
    victims: int = 0              # instances the wave took in the history (every tenant's); 0: not recorded


@dataclass(frozen=True)
class Trace:
    start: datetime
    end: datetime
    pools: tuple[Pool, ...]
    capacity: dict[str, int]            # instances each pool can lend to the orchestrator at most
    reclaims: tuple[Reclaim, ...]       # sorted by time
    seed: int = 1
    description: str = ""
    warmup: timedelta = field(default=timedelta(0))  # history before ``start`` the rankings may learn from
    rate_cards: tuple[tuple[datetime, dict[str, Decimal]], ...] = ()  # (time, pool -> rate), sorted by time
    # forward-capacity calendar (Blazar, ADR-22/ADR-07): (time, pool -> (free share ahead, expected reclaim %/h))
    forward: tuple[tuple[datetime, dict[str, tuple[float, float]]], ...] = ()
    # instances each reclaimable pool has free for the orchestrator, every 5 min (the region's rate-card rows);
    # without it the replay models capacity as ``capacity`` minus what recent waves hold
    free: tuple[tuple[datetime, dict[str, int]], ...] = ()
    # other tenants' live instances in each reclaimable pool on the same cards (what a wave's share is of)
    live: tuple[tuple[datetime, dict[str, int]], ...] = ()

    def __post_init__(self) -> None:
        times = [r.time for r in self.reclaims]
        if times != sorted(times):
            raise ValueError("trace reclaims must be sorted by time")
        unknown = {r.pool_id for r in self.reclaims} - {p.pool_id for p in self.pools}
        if unknown:
            raise ValueError(f"trace reclaims name unknown pools: {sorted(unknown)[:5]}")

    @property
    def days(self) -> float:
        """The trace's length in days."""
        return (self.end - self.start).total_seconds() / 86400
