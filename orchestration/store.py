"""The store boundary the analytics logic needs, as Protocols, so the I/O functions run with the Dagster
resources in production and with plain clients in benchmarks and tests."""

from __future__ import annotations

import json
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
    old generation or the new one, never half of one. ``table`` and ``columns`` are ours, never user input.

    One DELETE and one INSERT (the rows as one JSON array of arrays, each element cast to its column's type): each
    statement bumps the region's version in ``in_force_versions`` (a statement trigger), which is what the
    controller compares before it reads the rows; a row an INSERT each would bump it 231 times, and arrays of text
    a column cost psycopg a regular expression an element (a third of a replayed ranking's CPU)."""
    with pg.connection() as conn:
        types = dict(conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = %s::regclass "
            "AND attnum > 0 AND NOT attisdropped", (table,)).fetchall())
        insert = (f"INSERT INTO {table} ({', '.join(columns)}) SELECT "
                  f"{', '.join(f'(r->>{i})::{types[c]}' for i, c in enumerate(columns))} "
                  "FROM jsonb_array_elements(%s::jsonb) AS r")
        with conn.transaction():
            conn.execute(f"DELETE FROM {table} WHERE region = %s", (region,))
            if rows:
                conn.execute(insert, (json.dumps([list(r) for r in rows], default=_text),))
        conn.commit()


def _text(value: Any) -> str:
    """A value JSON has no type for, as PostgreSQL's input function for its column reads it."""
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)
