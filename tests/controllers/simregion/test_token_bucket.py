"""The client-side token bucket bounds mutating provider calls (ADR-12: 10 a second per region)."""

from __future__ import annotations

import pytest

from contracts.provider import LaunchRequest, OwnerTags
from contracts.provider_errors import Throttled
from controllers.providers.budget import TokenBucket

from .helpers import make_region


class FakeTime:
    def __init__(self) -> None:
        self.t = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.t += s


def test_ten_calls_a_second_pass_and_the_eleventh_is_throttled_with_the_wait() -> None:
    clock = FakeTime()
    bucket = TokenBucket(10, key="r1/batch", monotonic=clock.monotonic)
    for _ in range(10):
        bucket("launch")
    with pytest.raises(Throttled) as err:
        bucket("terminate")
    assert err.value.operation == "terminate" and err.value.budget_per_s == 10 and err.value.key == "r1/batch"
    assert err.value.retry_after_s == pytest.approx(0.1)
    clock.t += 0.1
    bucket("launch")


def test_a_blocking_bucket_waits_instead_and_never_exceeds_the_rate() -> None:
    clock = FakeTime()
    bucket = TokenBucket(10, burst=1, monotonic=clock.monotonic, blocking=True, sleep=clock.sleep)
    for _ in range(50):
        bucket("launch")
    assert clock.t == pytest.approx(4.9)
    assert bucket.spent == 50


def test_the_bucket_as_a_hook_bounds_a_providers_launches() -> None:
    region, _ = make_region()
    clock = FakeTime()
    bucket = TokenBucket(2, monotonic=clock.monotonic)
    pool = next(p.pool_id for p in region.catalogue().pools if p.purchase_model == "reclaimable")
    owner = OwnerTags(workload="w", pool=pool, partition="r1/a", generation=1)

    def launch() -> None:
        bucket("launch")
        region.launch(LaunchRequest(pool_id=pool, count=1, owner=owner))

    launch()
    launch()
    with pytest.raises(Throttled):
        launch()
    assert len(region.list_instances({"workload": "w"})) == 2
    with pytest.raises(ValueError, match="rate must be > 0"):
        TokenBucket(0)
