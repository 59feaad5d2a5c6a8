"""One row per event id: the ingest stores an id once, and dead-letters another payload under a stored id.

JetStream deduplicates by ``Nats-Msg-Id`` only, within its window; a publisher that reuses an ``event_id``
without one (or after the window) would otherwise have each payload stored as its own row — and as the events
table's sorting key starts with region and kind, a copy that differs there never collapses. So the ingest
looks the batch's ids up in ``event_ids`` (keyed on the id) before it inserts: an id stored with the same row
is a repeat (acknowledged, not stored again: a redelivery), with another row a conflict (dead-lettered with
reason ``conflicting-event-id``, the payload kept in the dead letter). ``sort_out`` is the pure decision;
``stored_digests`` and ``record`` the two ClickHouse calls.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from .eventrows import INSERT_FORMAT, encode_rows

__all__ = ["COLUMNS", "CONFLICT", "TABLE", "Sorted", "digest", "record", "settle_ids", "sort_out",
           "stored_digests"]

TABLE = "event_ids"
COLUMNS = ("event_id", "digest", "time")
CONFLICT = "conflicting-event-id"


def digest(row: Sequence[Any]) -> str:
    """A digest of one wire row (every column: an id's content is the whole event)."""
    return hashlib.sha256(orjson.dumps(list(row))).hexdigest()[:32]


@dataclass(frozen=True)
class Sorted:
    """Indexes into a batch's rows: to store, repeats of a stored or earlier row, and conflicts with one."""

    keep: list[int] = field(default_factory=list)
    repeats: list[int] = field(default_factory=list)
    conflicts: list[int] = field(default_factory=list)


def sort_out(rows: Sequence[Sequence[Any]], stored: Mapping[str, str]) -> Sorted:
    """Each row against the stored digests (id -> digest) and the batch's earlier rows.

    The first row of an id is kept, the same row again is a repeat, another row a conflict.
    """
    seen = dict(stored)
    out = Sorted()
    for index, row in enumerate(rows):
        mine, prior = digest(row), seen.get(str(row[0]))
        if prior is None:
            seen[str(row[0])] = mine
            out.keep.append(index)
        elif prior == mine:
            out.repeats.append(index)
        else:
            out.conflicts.append(index)
    return out


def settle_ids(batch: Any, stored: Mapping[str, str]) -> None:
    """Sort an ingest ``Batch`` in place: first rows stay, repeats are acknowledged, conflicts dead-lettered."""
    decided = sort_out(batch.rows, stored)
    batch.repeats += [batch.good[i] for i in decided.repeats]
    batch.dead += [(batch.good[i], f"{CONFLICT}: {batch.rows[i][0]} is stored with other content")
                   for i in decided.conflicts]
    batch.rows, batch.good = [batch.rows[i] for i in decided.keep], [batch.good[i] for i in decided.keep]


def stored_digests(client: Any, ids: Iterable[str]) -> dict[str, str]:
    """The digests stored for ``ids`` (a primary-key lookup)."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    from clickhouse_connect.driver.external import ExternalData

    # the ids travel as an external table, not as literals: a 2,000-id IN list is ~80 KB of SQL for the front
    # end's statement guard and the engine's parser to read on every batch
    table = ExternalData(file_name="batch_ids", data=("\n".join(wanted) + "\n").encode(), fmt="TabSeparated",
                         structure=["event_id String"])
    result = client.query(f"SELECT event_id, any(digest) FROM {TABLE} WHERE event_id IN batch_ids GROUP BY event_id",
                          external_data=table)
    return {str(r[0]): str(r[1]) for r in result.result_rows}


def record(client: Any, rows: Sequence[Sequence[Any]]) -> None:
    """Record the ids of rows just stored.

    After the events' insert: a crash between the two stores the event again on redelivery, which the events
    table's ReplacingMergeTree collapses.
    """
    if rows:
        client.raw_insert(TABLE, COLUMNS, encode_rows([[r[0], digest(r), r[2]] for r in rows]), fmt=INSERT_FORMAT)
