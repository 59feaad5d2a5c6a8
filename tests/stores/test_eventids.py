"""The event-id bookkeeping (stores.eventids): ClickHouse records each stored event's id and digest itself (a
materialized view on events), the ingest sends a batch once and compares digests only when ClickHouse did not
write every row. The ingest-level semantics (a conflict dead-lettered, a repeat stored once) are in
tests/security/test_event_id_reuse.py."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from contracts.events import Event
from stores import clickhouse, eventids
from stores import nats as sco_nats
from stores.eventrows import row_of
from stores.ingest import Ingest
from testkit.paths import REPO
from tests.stores.helpers import make_event

MIGRATION = REPO / "stores" / "migrations" / "clickhouse" / "0006_event_ids_view.sql"


def _rows(events: list[Event]) -> list[list[Any]]:
    return [row_of(event) for event in events]


def test_the_view_and_the_backfill_compute_the_digest_the_ingest_compares_with() -> None:
    flat = re.sub(r"\s+", " ", MIGRATION.read_text())
    assert flat.count(f"{eventids.DIGEST_SQL} AS digest") == 2  # the view and the backfill from events


def test_the_first_row_of_each_id_is_sent_and_later_copies_are_told_apart_by_content() -> None:
    first, again, other, lone = _rows([make_event(1), make_event(1), make_event(1, region="r2"), make_event(2)])
    found = eventids.by_id([first, lone, again, other, again])
    assert found.first == [0, 1]
    assert found.same == [(2, 0), (4, 0)]
    assert found.other == [(3, 0)]


@pytest.mark.services
def test_the_external_rows_have_the_events_tables_columns_and_types(clickhouse_migrated_url: str) -> None:
    client = clickhouse.client(clickhouse_migrated_url)
    try:
        described = client.query("DESCRIBE TABLE events").result_rows
    finally:
        client.close()
    plain = re.compile(r"^LowCardinality\((.*)\)$")
    columns = [" ".join((name, plain.sub(r"\1", kind))) for name, kind, *_ in described]
    assert columns == eventids.STRUCTURE


@pytest.mark.services
def test_the_ingest_table_has_the_events_tables_columns(clickhouse_migrated_url: str) -> None:
    client = clickhouse.client(clickhouse_migrated_url)
    try:
        ingest, events = (client.query(f"DESCRIBE TABLE {table}").result_rows for table in (eventids.INGEST_TABLE,
                                                                                         "events"))
    finally:
        client.close()
    assert [tuple(row[:2]) for row in ingest] == [tuple(row[:2]) for row in events]


@pytest.mark.services
def test_an_insert_stores_only_rows_whose_ids_are_new_and_the_view_records_them_with_their_digest(
        clickhouse_migrated_url: str) -> None:
    stored, new = _rows([make_event(i) for i in range(3)]), _rows([make_event(i) for i in range(3, 5)])
    conflicting = _rows([make_event(0, region="r2")])
    client = clickhouse.client(clickhouse_migrated_url)
    try:
        assert eventids.insert_new(client, stored) == 3 * 3  # events_ingest, events, event_ids
        assert eventids.insert_new(client, [*stored, *new, *conflicting]) == 6 + 2 * 2  # only the two new ids
        assert client.command("SELECT count() FROM events") == 5
        assert client.command("SELECT count() FROM event_ids") == 5
        assert eventids.stored_as(client, [*new, *conflicting, *_rows([make_event(9)]), stored[1]]) == [
            True, True, False, None, True]
    finally:
        client.close()


@pytest.mark.services
def test_an_event_whose_id_was_lost_after_its_insert_is_stored_again_and_collapses(
        clickhouse_migrated_url: str) -> None:
    """A crash between the events' part and the view's leaves an event without its id, never the reverse: the
    redelivery is stored again, and the ReplacingMergeTree keeps one row."""
    rows = _rows([make_event(i) for i in range(4)])
    client = clickhouse.client(clickhouse_migrated_url)
    try:
        eventids.insert_new(client, rows)
        client.command("TRUNCATE TABLE event_ids")  # what the crash leaves
        assert eventids.stored_as(client, rows) == [None] * 4
        assert eventids.insert_new(client, rows) == 3 * 4
        assert client.command("SELECT count() FROM events FINAL") == 4
        assert eventids.stored_as(client, rows) == [True] * 4
    finally:
        client.close()


@pytest.mark.services
def test_the_backfill_records_the_ids_of_events_stored_before_the_view(clickhouse_migrated_url: str) -> None:
    from stores.sqlsplit import split_statements

    rows = _rows([make_event(i) for i in range(3)])
    client = clickhouse.client(clickhouse_migrated_url)
    try:
        client.command(f"DROP VIEW {eventids.VIEW}")  # as before migration 0006
        eventids.insert_new(client, rows)
        client.command("INSERT INTO event_ids VALUES ('not-a-stored-id', 'a digest of Python', now())")
        assert eventids.stored_as(client, rows) == [None] * 3
        for statement in split_statements(MIGRATION.read_text()):
            client.command(statement)
        assert eventids.stored_as(client, rows) == [True] * 3
        assert client.command("SELECT count() FROM event_ids WHERE event_id = 'not-a-stored-id'") == 0
    finally:
        client.close()


class _Counting:
    """A client that counts the requests it sends."""

    def __init__(self, client: Any) -> None:
        self.client, self.requests = client, 0

    def __getattr__(self, name: str) -> Any:
        call = getattr(self.client, name)
        if name not in ("command", "query", "raw_insert", "insert"):
            return call

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.requests += 1
            return call(*args, **kwargs)

        return counted


@pytest.mark.services
def test_a_batch_of_new_events_costs_the_ingest_one_request_and_a_redelivery_two(
        nats_url: str, clickhouse_migrated_url: str) -> None:
    events = [make_event(i) for i in range(20)]

    async def settle() -> tuple[int, int, int]:
        nc = await sco_nats.connect(nats_url)
        client = _Counting(clickhouse.client(clickhouse_migrated_url))
        ingest = Ingest(nc.jetstream(), client, fetch_timeout=2)
        await ingest.start()
        js = nc.jetstream()
        await sco_nats.ensure_events_stream(js)
        try:
            for event in events:
                await js.publish(event.subject, event.to_json())  # no Nats-Msg-Id: the second copy reaches us
            await ingest.step()
            first = client.requests
            for event in events:
                await js.publish(event.subject, event.to_json())
            await ingest.step()
            return first, client.requests - first, ingest.inserted
        finally:
            await nc.close()
            client.client.close()

    assert asyncio.run(settle()) == (1, 2, 20)
