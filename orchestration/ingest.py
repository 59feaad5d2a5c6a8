"""The event sensor's logic: the cursor that tells whether the event history in ClickHouse moved. The ingest
itself (``stores.ingest``: JetStream → ClickHouse) runs as its own service, ``sco ingest``."""

from __future__ import annotations

from .store import ClickHouse

__all__ = ["events_cursor"]


def events_cursor(ch: ClickHouse) -> str | None:
    """``<count>@<latest time>`` of the events table; ``None`` while it is empty."""
    rows = ch.rows("SELECT count(), max(time) FROM events")
    count, latest = rows[0] if rows else (0, None)
    return f"{count}@{latest}" if count else None
