"""The event sensor's logic: one pass of issue 3's ingest (``stores.ingest.drain``: JetStream → ClickHouse)
and the cursor that tells whether the event history moved."""

from __future__ import annotations

from .store import ClickHouse

__all__ = ["events_cursor", "ingest_pending"]


def ingest_pending(nats_url: str | None = None, clickhouse_url: str | None = None) -> int | None:
    """One pass of issue 3's ingest (``stores.ingest.drain``); ``None`` when no NATS is configured."""
    from stores.config import StoreNotConfigured, resolve_url
    from stores.ingest import drain

    try:
        url = resolve_url("nats", nats_url or None)
    except StoreNotConfigured:
        return None
    return drain(url, clickhouse_url or None)


def events_cursor(ch: ClickHouse) -> str | None:
    """``<count>@<latest time>`` of the events table; ``None`` while it is empty."""
    rows = ch.rows("SELECT count(), max(time) FROM events")
    count, latest = rows[0] if rows else (0, None)
    return f"{count}@{latest}" if count else None
