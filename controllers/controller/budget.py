"""The regional token budget (ADR-12): 10 mutating provider calls a second per region, split statically
between its partitions (by weight, default equal). Every mutating call — launch (one multi-create is one
call), terminate, reclaim — takes a token from its partition's bucket first; an empty bucket raises
``Throttled`` and the reconciler leaves the rest for its next pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from contracts.provider import Instance, LaunchRequest, Provider, ReclaimReceipt
from controllers.providers.budget import TokenBucket

__all__ = ["BudgetedProvider", "split_budget"]


def split_budget(region_rate: float, partitions: Sequence[str], weights: Mapping[str, float] | None = None,
                 *, monotonic: Callable[[], float] = time.monotonic) -> dict[str, TokenBucket]:
    """One bucket per partition; the rates sum to ``region_rate``; burst = one second's worth (≥ 1)."""
    if not partitions:
        raise ValueError("split_budget needs at least one partition")
    w = {p: float((weights or {}).get(p, 1.0)) for p in partitions}
    total = sum(w.values())
    out = {}
    for p in partitions:
        rate = region_rate * w[p] / total
        out[p] = TokenBucket(rate, burst=max(1.0, rate), key=p, monotonic=monotonic)
    return out


class BudgetedProvider:
    """A ``Provider`` whose mutating calls first take a token from ``bucket``. Reads pass through."""

    def __init__(self, inner: Provider, bucket: TokenBucket) -> None:
        self.inner = inner
        self.bucket = bucket

    @property
    def region(self) -> str:
        return self.inner.region

    def launch(self, request: LaunchRequest) -> tuple[Instance, ...]:
        self.bucket("launch")
        return self.inner.launch(request)

    def terminate(self, instance_id: str) -> None:
        self.bucket("terminate")
        self.inner.terminate(instance_id)

    def reclaim(self, instance_ids: tuple[str, ...], *, drill: bool = True) -> ReclaimReceipt:
        self.bucket("reclaim")
        return self.inner.reclaim(instance_ids, drill=drill)

    def list_instances(self, tags: Mapping[str, str] | None = None) -> tuple[Instance, ...]:
        return self.inner.list_instances(tags)

    def forward_capacity(self, horizon: timedelta) -> Any:
        return self.inner.forward_capacity(horizon)

    def __getattr__(self, name: str) -> Any:  # catalogue, rate_card, reservations, quota_headroom
        return getattr(self.inner, name)
