"""Clocks for the simulated region: wall time for live demos and drills, virtual time for replay."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

__all__ = ["VirtualClock", "WallClock"]


class WallClock:
    def now(self) -> datetime:
        """The current time (UTC)."""
        return datetime.now(UTC)


class VirtualClock:
    """Time moves only when told to; ``advance_to`` never goes backwards."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("VirtualClock start must carry a timezone (UTC)")
        self._now = start.astimezone(UTC)

    def now(self) -> datetime:
        """The virtual time."""
        return self._now

    def advance_to(self, when: datetime) -> None:
        """Move the virtual time to ``when`` (never back)."""
        self._now = max(self._now, when)

    def advance(self, delta: timedelta) -> None:
        """Move the virtual time on by ``delta``."""
        self._now += delta
