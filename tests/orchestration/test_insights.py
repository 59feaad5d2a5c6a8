from __future__ import annotations

from decimal import Decimal

import pytest

from orchestration.insights import Breach, recommend

D = Decimal


@pytest.mark.parametrize(("cf", "net", "fallback_h", "hours", "measured", "declared", "direction", "why"), [
    (D(100), D(-5), D(0), D(100), 1.0, 2.0, "off-reclaimable", "not positive"),
    (D(100), D(50), D(0), D(100), 3.0, 2.0, "off-reclaimable", "exceeds the declared"),
    (D(100), D(10), D(0), D(100), 1.0, 2.0, "off-reclaimable", "below 20 %"),
    (D(100), D(40), D(60), D(100), 0.5, 2.0, "onto-reclaimable", "guaranteed fallback"),
    (D(100), D(40), D(60), D(100), 1.5, 2.0, "stay", "justifies"),
    (D(100), D(55), D(5), D(100), 1.0, 2.0, "stay", "justifies"),
])
def test_recommendations_follow_the_saving_and_the_declared_tolerance(
        cf: Decimal, net: Decimal, fallback_h: Decimal, hours: Decimal, measured: float, declared: float,
        direction: str, why: str) -> None:
    r = recommend("w", cf, net, fallback_h, hours, measured, declared)
    assert r.direction == direction
    assert why in r.reason


def test_a_breach_is_a_measured_rate_above_the_declared_one_and_needs_hours() -> None:
    assert Breach("w", "o", 100.0, 3, 3.0, 2.0).breach
    assert not Breach("w", "o", 100.0, 2, 2.0, 2.0).breach
    assert not Breach("w", "o", 0.0, 0, 0.0, 2.0).breach
