"""Fixtures for the provider tests: a simulated region on a virtual clock, and a real nats-server."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from controllers.simregion.clock import VirtualClock
from controllers.simregion.config import RegionConfig
from controllers.simregion.region import SimulatedRegion

START = datetime(2026, 1, 5, tzinfo=UTC)


def make_region(**overrides: object) -> tuple[SimulatedRegion, VirtualClock]:
    clock = VirtualClock(START)
    return SimulatedRegion(RegionConfig.model_validate({"seed": 7, **overrides}), clock), clock


@pytest.fixture
def nats_url(tmp_path: Path) -> Iterator[str]:
    from sco.stack.services import start_nats, stop_pid

    running = start_nats(tmp_path / "nats")
    try:
        yield running.url
    finally:
        stop_pid(running.pid)
