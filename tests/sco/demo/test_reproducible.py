"""The demo's figures do not depend on the hour it runs: the simulated region it configures pins its day's hour,
so two runs started at different times of day see the same prices and the same reclaim intensity (the region's
demand cycle peaks mid-afternoon UTC; unpinned, a run at 14:35 and one at 00:44 differed by 15 points of net
saving)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from controllers.simregion.clock import VirtualClock
from controllers.simregion.config import RegionConfig
from controllers.simregion.region import SimulatedRegion
from sco.demo.context import DemoConfig
from sco.demo.runner import region_settings


def rates(settings: dict[str, str], start: datetime) -> tuple[tuple[str, str], ...]:
    """The rate card 20 minutes into a region started at ``start`` with the demo's settings."""
    clock = VirtualClock(start)
    region = SimulatedRegion(RegionConfig.model_validate({**settings, "pools": 12}), clock)
    clock.advance(timedelta(minutes=20))
    region.sync()
    return tuple((e.pool_id, str(e.rate_eur_h)) for e in region.rate_card().entries)


@pytest.mark.parametrize("other", [datetime(2026, 11, 30, 14, 35, tzinfo=UTC),
                                   datetime(2026, 12, 1, 0, 44, tzinfo=UTC)])
def test_two_runs_of_the_demo_s_region_at_different_hours_see_the_same_prices(other: datetime) -> None:
    settings = region_settings(DemoConfig())
    assert settings["start_hour"] == "9"
    assert rates(settings, datetime(2026, 11, 29, 9, 0, tzinfo=UTC)) == rates(settings, other)


def test_unpinned_the_hour_of_the_run_changes_the_prices() -> None:
    settings = {k: v for k, v in region_settings(DemoConfig()).items() if k != "start_hour"}
    afternoon = rates(settings, datetime(2026, 11, 30, 14, 35, tzinfo=UTC))
    night = rates(settings, datetime(2026, 12, 1, 0, 44, tzinfo=UTC))
    assert afternoon != night
