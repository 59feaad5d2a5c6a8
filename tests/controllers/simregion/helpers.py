"""A simulated region on a virtual clock, for the provider tests (and the agent's notice tests)."""

from __future__ import annotations

from datetime import UTC, datetime

from controllers.simregion.clock import VirtualClock
from controllers.simregion.config import RegionConfig
from controllers.simregion.region import SimulatedRegion

__all__ = ["START", "make_region"]

START = datetime(2026, 1, 5, tzinfo=UTC)


def make_region(**overrides: object) -> tuple[SimulatedRegion, VirtualClock]:
    clock = VirtualClock(START)
    return SimulatedRegion(RegionConfig.model_validate({"seed": 7, **overrides}), clock), clock
