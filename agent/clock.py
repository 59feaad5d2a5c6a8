"""The agent's clocks: wall time (UTC) and monotonic seconds, injected so tests can drive them."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol

__all__ = ["Clock", "SystemClock"]


class Clock(Protocol):
    """The agent's clocks: wall time (UTC) and monotonic seconds; injected in tests."""

    def now(self) -> datetime:
        """The wall-clock time, timezone-aware UTC."""

    def monotonic(self) -> float:
        """Monotonic seconds."""


class SystemClock:
    """The system's clocks."""

    def now(self) -> datetime:
        """``datetime.now(UTC)``."""
        return datetime.now(UTC)

    def monotonic(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()
