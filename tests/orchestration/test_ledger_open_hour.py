"""``ledger.read_hour(until=…)``: an hour that is still open (the demo attributes its own) is read up to
``until``, so instances still running are not charged — nor counted as reclaimable hours — for time that
has not happened yet."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa

from orchestration.ledger import read_hour

HOUR = datetime(2026, 11, 29, 12, tzinfo=UTC)


class RecordingClickHouse:
    """Answers every query (rows or Arrow) with no rows and keeps the parameters it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def rows(self, sql: str, parameters: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        self.calls.append((sql, dict(parameters or {})))
        return []

    def arrow(self, sql: str, parameters: dict[str, Any] | None = None) -> pa.Table:
        self.calls.append((sql, dict(parameters or {})))
        return pa.table({})

    def command(self, sql: str, parameters: dict[str, Any] | None = None) -> None:
        return None

    def insert(self, table: str, rows: Sequence[Sequence[Any]], columns: Sequence[str]) -> int:
        return 0


def span_end(until: datetime | None) -> datetime:
    ch = RecordingClickHouse()
    read_hour(ch, "r1", HOUR, until=until)
    spans = [p for sql, p in ch.calls if "kind IN ('launched', 'terminated')" in sql]
    losses = [p for sql, p in ch.calls if "JSONHas(attributes" in sql]
    assert spans and losses and spans[0]["h1"] == losses[0]["h1"]
    end: datetime = spans[0]["h1"]
    return end


def test_an_open_hour_ends_its_instance_spans_and_losses_at_until() -> None:
    assert span_end(HOUR + timedelta(minutes=7)) == HOUR + timedelta(minutes=7)


def test_without_until_or_with_until_past_the_hour_the_whole_hour_is_read() -> None:
    assert span_end(None) == HOUR + timedelta(hours=1)
    assert span_end(HOUR + timedelta(hours=3)) == HOUR + timedelta(hours=1)


def test_an_until_before_the_hour_reads_an_empty_span() -> None:
    assert span_end(HOUR - timedelta(minutes=5)) == HOUR
