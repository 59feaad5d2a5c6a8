"""ADR-20's worked numbers, reproduced."""

from __future__ import annotations

from decimal import Decimal

import pytest

from contracts.checkpoint_math import (
    final_write_seconds,
    mtbf_unprotected_hours,
    requeue_waste_pct,
    young_daly_hours,
)


def test_four_percent_an_hour_with_three_and_a_half_percent_unprotected_gives_about_714_hours() -> None:
    assert mtbf_unprotected_hours(Decimal("4"), Decimal("3.5")) == pytest.approx(714.29, abs=0.01)


def test_a_45_second_checkpoint_at_714_hours_gives_a_young_daly_interval_of_about_four_hours() -> None:
    hours = young_daly_hours(45, mtbf_unprotected_hours(Decimal("4"), Decimal("3.5")))
    assert hours == pytest.approx(4.23, abs=0.01)
    assert round(hours) == 4


def test_ten_percent_no_notice_drops_the_mtbf_to_about_250_hours() -> None:
    assert mtbf_unprotected_hours(Decimal("4"), Decimal("10")) == pytest.approx(250.0)


def test_two_gib_at_50_mib_per_second_take_41_seconds_plus_overhead() -> None:
    assert final_write_seconds(Decimal("2"), Decimal("50"), 10) == pytest.approx(50.96, abs=0.01)


def test_a_90_minute_unit_at_four_percent_an_hour_wastes_exactly_the_three_percent_budget() -> None:
    assert requeue_waste_pct(Decimal("4"), 90) == pytest.approx(3.0)
    assert requeue_waste_pct(Decimal("4"), 120) == pytest.approx(4.0)
