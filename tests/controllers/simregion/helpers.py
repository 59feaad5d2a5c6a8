"""A simulated region on a virtual clock, for the provider tests (and the agent's notice tests)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from controllers.simregion.clock import VirtualClock
from controllers.simregion.config import RegionConfig
from controllers.simregion.region import SimulatedRegion

__all__ = ["START", "make_region", "serving"]

START = datetime(2026, 1, 5, tzinfo=UTC)


def make_region(**overrides: object) -> tuple[SimulatedRegion, VirtualClock]:
    clock = VirtualClock(START)
    return SimulatedRegion(RegionConfig.model_validate({"seed": 7, **overrides}), clock), clock


@contextmanager
def serving(region: SimulatedRegion, **kwargs: Any) -> Iterator[str]:
    """The region's HTTP API (``RegionService``, no NATS) on a loop in a thread; yields its base URL."""
    from controllers.simregion.service import RegionService

    service = RegionService(region, **kwargs)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stop = asyncio.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(service.start())
        ready.set()
        loop.run_until_complete(stop.wait())
        loop.run_until_complete(service.stop())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(30), "the region's HTTP API did not start within 30 s"
    try:
        yield service.url
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()
