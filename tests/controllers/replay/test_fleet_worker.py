"""A fleet controller's share of the region's token budget (ADR-12's static split, issue 18): its own bucket on
its own clock, so the order in which a round's passes run in wall time cannot lose refill. No timing: the
clocks are injected."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from contracts.provider_errors import Throttled
from controllers.replay.fleet_worker import WorkerSpec, partition_budget

PARTITIONS = ("r1/c00", "r1/c01", "r1/c02", "r1/c03", "r1/c04")
INTERVAL = 5.0
WALL_IN_PASS = {"r1/c00": 0.5, "r1/c01": 1.5, "r1/c02": 4.0, "r1/c03": 0.0, "r1/c04": 2.5}


def spec(partition: str) -> WorkerSpec:
    return WorkerSpec(partition, {}, "", "", "r1", 10.0, datetime(2026, 10, 1, tzinfo=UTC), PARTITIONS, INTERVAL)


def drain(bucket: Callable[[str], None]) -> int:
    """A pass launching until its first ``Throttled``."""
    n = 0
    while True:
        try:
            bucket("launch")
        except Throttled:
            return n
        n += 1


@pytest.mark.parametrize("order", [*itertools.permutations(PARTITIONS[:3]), PARTITIONS[::-1], PARTITIONS])
def test_whatever_order_the_passes_run_in_each_partition_gets_its_whole_share_of_the_regions_rate(
        order: tuple[str, ...]) -> None:
    clocks = dict.fromkeys(PARTITIONS, 0.0)   # one process each, its own clock
    buckets = {p: partition_budget(spec(p), functools.partial(clocks.__getitem__, p)) for p in PARTITIONS}
    admitted = dict.fromkeys(PARTITIONS, 0)
    rounds = 12
    rest = [p for p in PARTITIONS if p not in order]
    for r in range(rounds):
        for p in (*order, *rest):   # in this wall order; each draws at its pass start, then late in the pass
            for at in (0.0, WALL_IN_PASS[p]):
                clocks[p] = r * INTERVAL + at
                admitted[p] += drain(buckets[p])
    share = 10.0 / len(PARTITIONS)
    for p in PARTITIONS:   # the burst (one interval's worth) plus every second's refill up to the last draw
        assert admitted[p] == int(share * INTERVAL + share * ((rounds - 1) * INTERVAL + WALL_IN_PASS[p]) + 1e-9)
    # and the region never more than its rate over the run plus the banked bursts (ADR-12's bound)
    assert sum(admitted.values()) <= 10.0 * INTERVAL + 10.0 * ((rounds - 1) * INTERVAL + max(WALL_IN_PASS.values()))


def test_the_shares_add_up_to_the_regions_rate_and_each_banks_one_pass_interval() -> None:
    buckets = [partition_budget(spec(p), lambda: 0.0) for p in PARTITIONS]
    assert sum(b.rate for b in buckets) == pytest.approx(10.0)
    assert [b.burst for b in buckets] == [pytest.approx(10.0 / len(PARTITIONS) * INTERVAL)] * len(PARTITIONS)
    assert len({b.key for b in buckets}) == len(PARTITIONS)
