"""When a ranking computed from the region at t is in force (``RankingClock``): the first at once (the ranking asset
ran through the warm-up), each later one ``latency`` after its inputs, every five minutes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from controllers.replay.through_controller import RankingClock

T0 = datetime(2026, 10, 1, tzinfo=UTC)
MIN = timedelta(minutes=1)


def _run(latency: timedelta, passes: int) -> list[tuple[int, int]]:
    """(pass, minute the published ranking was computed at) for each ranking put in force."""
    clock, landed, current = RankingClock(latency), [], [0]

    def published(at: int) -> Callable[[], None]:
        return lambda: landed.append((current[0], at))

    for n in range(passes):
        current[0], now = n, T0 + n * MIN
        if clock.due(now):
            clock.begin(now, published(n))
        clock.land(now)
    return landed


@pytest.mark.parametrize(("latency", "expected"), [
    (timedelta(0), [(0, 0), (5, 5), (10, 10)]),
    (2 * MIN, [(0, 0), (7, 5), (12, 10)]),
    (90 * timedelta(seconds=1), [(0, 0), (7, 5), (12, 10)]),   # the first pass at or after t + latency
    (5 * MIN, [(0, 0), (10, 5)]),                              # lands with the next one begun
])
def test_a_ranking_is_in_force_its_latency_after_its_inputs_and_the_first_at_once(
        latency: timedelta, expected: list[tuple[int, int]]) -> None:
    assert _run(latency, 13) == expected


def test_land_says_whether_a_ranking_was_put_in_force() -> None:
    clock = RankingClock(2 * MIN)
    clock.begin(T0, lambda: None)
    assert clock.land(T0) is True
    clock.begin(T0 + 5 * MIN, lambda: None)
    assert [clock.land(T0 + k * MIN) for k in (5, 6, 7, 8)] == [False, False, True, False]
    assert not clock.due(T0 + 9 * MIN) and clock.due(T0 + 10 * MIN)
