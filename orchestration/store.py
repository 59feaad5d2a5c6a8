"""The store boundary the analytics logic needs, as Protocols, so the I/O functions run with the Dagster
resources in production and with plain clients in benchmarks and tests."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Protocol

__all__ = ["ClickHouse", "Postgres", "latest_event_time", "replace_in_force", "utc"]


class ClickHouse(Protocol):
    def rows(self, sql: str, parameters: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """One query's result rows."""

    def command(self, sql: str, parameters: dict[str, Any] | None = None) -> None:
        """Run one statement."""

    def insert(self, table: str, rows: Sequence[Sequence[Any]], columns: Sequence[str]) -> int:
        """Insert ``rows`` into ``table``; the number inserted."""


class Postgres(Protocol):
    def connection(self) -> AbstractContextManager[Any]:
        """A connection for the duration of a ``with`` block."""


def utc(value: datetime) -> datetime:
    """``value`` as an aware UTC time (a naive time is taken as UTC)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def latest_event_time(ch: ClickHouse, region: str) -> datetime | None:
    """The time of the region's latest event, or None without events."""
    rows = ch.rows("SELECT max(time), count() FROM events WHERE region = {r:String}", {"r": region})
    if not rows or not rows[0][1]:
        return None
    return utc(rows[0][0])


def replace_in_force(pg: Postgres, table: str, region: str, columns: Sequence[str],
                     rows: Sequence[Sequence[Any]]) -> None:
    """Replace a region's rows in force in ``table`` in one transaction: a reader (the controller) sees the
    old generation or the new one, never half of one. ``table`` and ``columns`` are ours, never user input."""
    insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))})"
    with pg.connection() as conn:
        with conn.transaction():
            conn.execute(f"DELETE FROM {table} WHERE region = %s", (region,))
            with conn.cursor() as cur:
                cur.executemany(insert, [tuple(r) for r in rows])
        conn.commit()
