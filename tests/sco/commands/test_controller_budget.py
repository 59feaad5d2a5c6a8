"""`sco controller run`'s share of the region's token budget (ADR-12): a pass draws until its first ``Throttled``
and the next pass comes an interval later, so the bucket must bank an interval's refill to give the controller
its whole share."""

from __future__ import annotations

import pytest

from contracts.provider_errors import Throttled
from sco.commands.controller import partition_bucket

PARTITIONS = [f"r1/c{k}" for k in range(10)]


def _calls_in(seconds: float, interval_s: float, burst_interval_s: float) -> int:
    """Calls a controller gets in ``seconds``: a pass every ``interval_s``, drawing until throttled."""
    now = [0.0]
    bucket = partition_bucket(10.0, PARTITIONS, "r1/c3", burst_interval_s, monotonic=lambda: now[0])
    calls = 0
    while now[0] < seconds:
        try:
            while True:
                bucket("launch")
                calls += 1
        except Throttled:
            pass
        now[0] += interval_s
    return calls


@pytest.mark.parametrize("interval_s", [1.0, 5.0, 10.0])
def test_a_controller_passing_every_interval_gets_its_whole_share_of_the_region_budget(interval_s: float) -> None:
    calls = _calls_in(600.0, interval_s, interval_s)
    assert 600 * 1.0 * 0.95 <= calls <= 600 * 1.0 + 10 * interval_s   # 10 calls/s over 10 partitions: 1/s


def test_with_a_one_second_burst_a_five_second_pass_would_use_a_fifth_of_the_share() -> None:
    assert _calls_in(600.0, 5.0, 1.0) <= 600 * 0.25   # what `sco controller run` built before 2 Dec 2026
