"""One row per event id: the ingest stores an id once, and dead-letters another payload under a stored id.

JetStream deduplicates by ``Nats-Msg-Id`` only, within its window; a publisher that reuses an ``event_id``
without one (or after the window) would otherwise have each payload stored as its own row — and as the events
table's sorting key starts with region and kind, a copy that differs there never collapses. So every stored
event's id is in ``event_ids`` (keyed on the id) with a digest of the row: ClickHouse fills it, a materialized
view on ``events`` (migration ``0006``), and computes the digest (:data:`DIGEST_SQL`), so the ingest computes
none. A row whose id is stored with the same digest is a repeat (acknowledged, not stored again: a
redelivery), with another digest a conflict (dead-lettered with reason ``conflicting-event-id``, the payload
kept in the dead letter).

A batch costs one request when all is well: :func:`insert_new` inserts the first row of each id (:func:`by_id`)
into ``events_ingest``, a Null table whose view stores in ``events`` the rows whose ids are not in
``event_ids`` (a primary-key lookup of the block's ids). When ClickHouse reports every row written three times
(``events_ingest``, ``events``, ``event_ids``), every row was new and is stored. Otherwise (a redelivery, a
reused id, a short write) :func:`stored_as` asks, row by row, whether its id is stored with the same digest —
the answer the ingest acts on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .eventrows import EVENT_COLUMNS, INSERT_FORMAT, encode_rows

__all__ = ["BATCH", "CONFLICT", "DIGEST_SQL", "INGEST_TABLE", "STRUCTURE", "TABLE", "VIEW", "WRITES", "ById", "by_id",
           "insert_new", "stored_as", "written_rows"]

TABLE = "event_ids"
VIEW = "event_ids_of_events"  # events -> event_ids (migration 0006)
INGEST_TABLE = "events_ingest"  # Null; its view stores the rows with new ids in events (migration 0006)
WRITES = 3  # rows written per new row: events_ingest, events, event_ids
CONFLICT = "conflicting-event-id"
BATCH = "batch"  # the external table :func:`stored_as` sends the rows in
# The digest of a row as stored (every column but the id), as the view computes it; the same text as in
# migration 0006 (tests/stores/test_eventids.py holds them together).
DIGEST_SQL = ("lower(hex(substring(SHA256(toString(tuple(kind, time, region, partition, pool, instance, workload, "
              "contract_version, cause, drill, source, attributes))), 1, 16)))")
_TYPES = {"time": "DateTime64(3, 'UTC')", "drill": "Bool"}  # every other column: String (LowCardinality or not)
STRUCTURE = [f"{column} {_TYPES.get(column, 'String')}" for column in EVENT_COLUMNS]
_STORED_AS = (f"SELECT n, notEmpty(stored.digests), has(stored.digests, {DIGEST_SQL}) FROM {BATCH} LEFT JOIN "
              f"(SELECT event_id, groupUniqArray(digest) AS digests FROM {TABLE} "
              f"WHERE event_id IN (SELECT event_id FROM {BATCH}) GROUP BY event_id) AS stored USING event_id")


@dataclass(frozen=True)
class ById:
    """Indexes into a batch's rows: the first row of each id, and the later rows of an id with their first's index."""

    first: list[int] = field(default_factory=list)
    same: list[tuple[int, int]] = field(default_factory=list)  # (later row, first row): the same row again
    other: list[tuple[int, int]] = field(default_factory=list)  # (later row, first row): another row, same id


def by_id(rows: Sequence[Sequence[Any]]) -> ById:
    """Each row against the batch's earlier rows of its id (rows compared whole: no digest in Python)."""
    firsts: dict[Any, int] = {}
    out = ById()
    for index, row in enumerate(rows):
        first = firsts.setdefault(row[0], index)
        if first == index:
            out.first.append(index)
        elif rows[first] == row:
            out.same.append((index, first))
        else:
            out.other.append((index, first))
    return out


def written_rows(summary: Any) -> int | None:
    """Rows the server says it wrote, from clickhouse-connect's ``QuerySummary`` (``None``: not reported)."""
    raw = getattr(summary, "summary", None) or {}
    value = raw.get("written_rows") if isinstance(raw, dict) else None
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _external(rows: Sequence[list[Any]], structure: list[str]) -> Any:
    from clickhouse_connect.driver.external import ExternalData

    return ExternalData(file_name=BATCH, data=encode_rows(rows), fmt=INSERT_FORMAT, structure=structure)


def insert_new(client: Any, rows: Sequence[list[Any]]) -> int | None:
    """Store the rows whose ids are not in ``event_ids`` (one request; the ids one each: :func:`by_id`).

    Returns the rows ClickHouse reports written — into ``events_ingest`` all, into ``events`` and ``event_ids``
    those stored — or ``None`` when it does not say.
    """
    return written_rows(client.raw_insert(INGEST_TABLE, EVENT_COLUMNS, encode_rows(rows), fmt=INSERT_FORMAT))


def stored_as(client: Any, rows: Sequence[list[Any]]) -> list[bool | None]:
    """Per row: ``True`` when its id is stored with this row's digest, ``False`` with another, ``None``: not stored."""
    if not rows:
        return []
    numbered = [[*row, n] for n, row in enumerate(rows)]
    result = client.query(_STORED_AS, external_data=_external(numbered, [*STRUCTURE, "n UInt32"]))
    out: list[bool | None] = [None] * len(rows)
    for n, stored, same in result.result_rows:
        out[int(n)] = bool(same) if stored else None
    return out
