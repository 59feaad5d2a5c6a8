"""Guaranteed demand on the simulated region's aggregates: the daily cycle, bursts, each aggregate's weight,
and the room that booked guaranteed requests hold (``RegionConfig.room_first``).

A request is booked ``HORIZON_S`` before it lands, so the forward calendar sees it before the rate card (which
follows current utilisation) does — ADR-08: a pool is cheap before its tenants arrive.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from datetime import datetime

from .config import RegionConfig

__all__ = ["GuaranteedDemand", "poisson"]


class GuaranteedDemand:
    def __init__(self, config: RegionConfig, start: datetime, slots: Mapping[str, int]) -> None:
        """``slots``: reclaimable instance slots per aggregate (weights each aggregate's share of demand)."""
        self.config = config
        self._start_hour = (config.start_hour if config.start_hour is not None
                            else start.hour + start.minute / 60.0 + start.second / 3600.0)
        self._daily_at = (math.nan, 1.0)
        self.burst_until: dict[str, float] = dict.fromkeys(slots, -1.0)
        self.burst_start: dict[str, float] = dict.fromkeys(slots, -1.0)  # when a booked burst's demand lands
        burst_p = config.bursts_per_aggregate_day * config.burst_mean_s / 86400.0
        self._burst_norm = 1.0 + (config.burst_factor - 1.0) * min(burst_p, 1.0)
        spread = random.Random(f"{config.seed}:aggregates")
        raw = {a: math.exp(config.aggregate_spread * spread.gauss(0, 1)) for a in sorted(slots)}
        mean = sum(raw[a] * slots[a] for a in raw) / max(sum(slots.values()), 1)
        self.aggregate_weight = {a: raw[a] / mean for a in raw}  # weighted mean 1: the region rate holds
        # booked requests per aggregate: (lands, leaves, vCPU); held_now is kept by the land/leave events
        self.booked: dict[str, list[tuple[float, float, int]]] = {a: [] for a in slots}
        self.held_now: dict[str, int] = dict.fromkeys(slots, 0)
        self._held_at: tuple[tuple[str, float], int] = (("", math.nan), 0)

    def daily(self, t: float) -> float:
        """The daily cycle (mean 1): peaks mid-afternoon UTC."""
        if self._daily_at[0] == t:
            return self._daily_at[1]
        hour = (self._start_hour + t / 3600.0) % 24.0
        value = 1.0 + self.config.daily_amplitude * math.sin(2 * math.pi * (hour - 9.0) / 24.0)
        self._daily_at = (t, value)
        return value

    def bursting(self, agg: str, t: float) -> bool:
        """True while aggregate ``agg`` is in a demand burst at ``t``."""
        return self.burst_start[agg] <= t < self.burst_until[agg]

    def intensity(self, agg: str, t: float) -> float:
        """Guaranteed demand's intensity on ``agg`` at ``t`` (weight × daily cycle × burst)."""
        burst = self.config.burst_factor if self.bursting(agg, t) else 1.0
        return self.aggregate_weight[agg] * self.daily(t) * burst / self._burst_norm

    def utilisation(self, agg: str, t: float) -> float:
        """The share of ``agg``'s guaranteed capacity in use at ``t``."""
        a = self.config.daily_amplitude
        u = 0.55 + (0.3 * (self.daily(t) - 1.0) / a if a > 0 else 0.0)
        return min(0.98, u + (0.2 if self.bursting(agg, t) else 0.0))

    def book(self, agg: str, lands: float, leaves: float, vcpu: int) -> None:
        """Book ``vcpu`` of guaranteed demand on ``agg`` from ``lands`` to ``leaves``."""
        self.booked[agg].append((lands, leaves, vcpu))
        self._held_at = (("", math.nan), 0)

    def prune(self, t: float) -> None:
        """Forget requests that have left by ``t``."""
        for agg, rows in self.booked.items():
            self.booked[agg] = [b for b in rows if b[1] > t]

    def held(self, agg: str, t: float, now: float) -> int:
        """vCPU of the aggregate's room that booked requests hold at ``t`` (the calendar knows a request from
        its booking)."""
        if t == now:
            return self.held_now[agg]
        if self._held_at[0] != (agg, t):  # the forward calendar asks for one time, pool after pool
            self._held_at = ((agg, t), sum(v for lands, leaves, v in self.booked[agg] if lands <= t < leaves))
        return self._held_at[1]


def poisson(rng: random.Random, lam: float) -> int:
    """A Poisson draw (normal approximation above 30)."""
    if lam <= 0:
        return 0
    if lam > 30:
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    limit, k, p = math.exp(-lam), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1
