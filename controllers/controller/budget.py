"""The regional token budget (ADR-12): 10 mutating provider calls a second per region, split statically
between its partitions (by weight, default equal). Every mutating call — launch (one multi-create is one
call), terminate, reclaim — takes a token from its partition's bucket first; an empty bucket raises
``Throttled`` and the reconciler leaves the rest for its next pass.

``RegionBudget`` is the same budget shared instead of split: one PostgreSQL row per region
(``region_token_budget``) that every partition controller, each in its own process, draws from with one atomic
``UPDATE`` — a quiet partition's share is there for a busy one (the fleet-scale simulation).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from contracts.provider import Instance, LaunchRequest, Provider, ReclaimReceipt
from contracts.provider_errors import Throttled
from controllers.providers.budget import MutatingHook, TokenBucket

__all__ = ["BudgetedProvider", "RegionBudget", "split_budget"]

_TAKE = """UPDATE region_token_budget SET tokens = LEAST(burst, tokens + GREATEST(%(now)s - at, 0) * rate) - 1,
    at = GREATEST(at, %(now)s), spent = spent + 1
    WHERE region = %(region)s AND LEAST(burst, tokens + GREATEST(%(now)s - at, 0) * rate) >= 1 - 1e-9
    RETURNING tokens"""
_REFUSE = """UPDATE region_token_budget SET refused = refused + 1 WHERE region = %(region)s
    RETURNING (1 - LEAST(burst, tokens + GREATEST(%(now)s - at, 0) * rate)) / rate"""


class RegionBudget:
    """The region's ``rate`` mutating calls a second (``burst`` banked) on one PostgreSQL row that every
    partition controller draws from. ``conn``: an autocommit connection of its own (a token taken inside a
    controller's transaction would hold the row's lock until that commits). ``monotonic``: seconds on a clock
    every process shares (wall time live; the simulation's virtual time)."""

    def __init__(self, conn: Any, region: str, rate: float = 10.0, burst: float | None = None, *,
                 monotonic: Callable[[], float] = time.time) -> None:
        if rate <= 0:
            raise ValueError(f"token budget rate must be > 0 calls/s, got {rate}")
        self.conn, self.region, self.rate = conn, region, rate
        self.burst = max(1.0, burst if burst is not None else rate)
        self.key = f"region {region}"
        self._monotonic = monotonic
        self.spent = 0      # this process's admitted calls
        self.refused = 0    # this process's refused calls

    def ensure(self) -> RegionBudget:
        """Create the region's row, full, unless it is there (its rate and burst are then the row's)."""
        self.conn.execute("INSERT INTO region_token_budget (region, rate, burst, tokens, at) VALUES "
                          "(%s, %s, %s, %s, %s) ON CONFLICT (region) DO NOTHING",
                          (self.region, self.rate, self.burst, self.burst, self._monotonic()))
        return self

    def try_acquire(self) -> float:
        """Spend one token and return 0, or return the seconds until one is there (spending nothing)."""
        args = {"now": self._monotonic(), "region": self.region}
        if self.conn.execute(_TAKE, args).fetchone() is not None:
            self.spent += 1
            return 0.0
        row = self.conn.execute(_REFUSE, args).fetchone()
        if row is None:
            raise LookupError(f"no token budget row for region {self.region}: call RegionBudget.ensure() first")
        self.refused += 1
        return max(float(row[0]), 0.0)

    def __call__(self, operation: str) -> None:
        wait = self.try_acquire()
        if wait > 0.0:
            raise Throttled(operation, wait, self.rate, self.key)

    def totals(self) -> tuple[int, int]:
        """(spent, refused) by every process, from the row."""
        row = self.conn.execute("SELECT spent, refused FROM region_token_budget WHERE region = %s",
                                (self.region,)).fetchone()
        return (0, 0) if row is None else (int(row[0]), int(row[1]))


def split_budget(region_rate: float, partitions: Sequence[str], weights: Mapping[str, float] | None = None,
                 *, monotonic: Callable[[], float] = time.monotonic, burst_s: float = 1.0) -> dict[str, TokenBucket]:
    """One bucket per partition; the rates sum to ``region_rate``; burst = ``burst_s`` seconds' worth (≥ 1).
    Each bucket refills on its own clock, so the order in which partitions draw cannot lose refill. A controller
    whose pass ends at its first ``Throttled`` and comes back a pass interval later uses at most
    (burst + refill during the pass) per interval: ``burst_s`` = the pass interval lets it use its whole share."""
    if not partitions:
        raise ValueError("split_budget needs at least one partition")
    w = {p: float((weights or {}).get(p, 1.0)) for p in partitions}
    total = sum(w.values())
    out = {}
    for p in partitions:
        rate = region_rate * w[p] / total
        out[p] = TokenBucket(rate, burst=max(1.0, rate * burst_s), key=p, monotonic=monotonic)
    return out


class BudgetedProvider:
    """A ``Provider`` whose mutating calls first take a token from ``bucket``. Reads pass through."""

    def __init__(self, inner: Provider, bucket: TokenBucket | RegionBudget | MutatingHook) -> None:
        self.inner = inner
        self.bucket = bucket

    @property
    def region(self) -> str:
        """The region this provider serves."""
        return self.inner.region

    def launch(self, request: LaunchRequest) -> tuple[Instance, ...]:
        """Launch through the inner provider, after taking a token from the launch bucket."""
        self.bucket("launch")
        return self.inner.launch(request)

    def terminate(self, instance_id: str) -> None:
        """Terminate through the inner provider, after taking a token from the terminate bucket."""
        self.bucket("terminate")
        self.inner.terminate(instance_id)

    def reclaim(self, instance_ids: tuple[str, ...], *, drill: bool = True) -> ReclaimReceipt:
        """Reclaim through the inner provider, after taking a token from the reclaim bucket."""
        self.bucket("reclaim")
        return self.inner.reclaim(instance_ids, drill=drill)

    def list_instances(self, tags: Mapping[str, str] | None = None) -> tuple[Instance, ...]:
        """The inner provider's instances (reads take no token)."""
        return self.inner.list_instances(tags)

    def forward_capacity(self, horizon: timedelta) -> Any:
        """The inner provider's forward capacity (reads take no token)."""
        return self.inner.forward_capacity(horizon)

    def __getattr__(self, name: str) -> Any:  # catalogue, rate_card, reservations, quota_headroom
        return getattr(self.inner, name)
