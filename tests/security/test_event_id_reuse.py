"""An event id is stored once: the same ``event_id`` published again without ``Nats-Msg-Id`` (which JetStream
alone deduplicates by) with another kind or region is dead-lettered with ``conflicting-event-id`` and logged,
never stored beside the first; the very same payload again is acknowledged and not stored twice — in one
batch and across batches. Real nats-server and the ClickHouse front end."""

from __future__ import annotations

import asyncio
import logging

import pytest

from contracts.events import Event
from contracts.subjects import EventKind
from stores import clickhouse
from stores import nats as sco_nats
from stores.ingest import run
from tests.stores.helpers import make_event

pytestmark = pytest.mark.services


async def _publish_without_msg_id(url: str, events: list[Event]) -> None:
    nc = await sco_nats.connect(url)
    js = nc.jetstream()
    await sco_nats.ensure_events_stream(js)
    for event in events:
        await js.publish(event.subject, event.to_json())  # no Nats-Msg-Id: the stream keeps every copy
    await nc.close()


def test_an_event_id_reused_with_other_content_is_dead_lettered_and_a_repeat_stored_once(
        nats_url: str, clickhouse_migrated_url: str, caplog: pytest.LogCaptureFixture) -> None:
    first = make_event(7)
    other_kind = make_event(7, kind=EventKind.LOST)
    other_region = make_event(7, region="r2")
    asyncio.run(_publish_without_msg_id(nats_url, [first, first, make_event(8)]))      # one batch: a repeat
    with caplog.at_level(logging.WARNING, logger="stores.ingest"):
        one = asyncio.run(run(nats_url, clickhouse_migrated_url, batch_size=10, idle_exit=True))
        asyncio.run(_publish_without_msg_id(nats_url, [other_kind, first, other_region]))  # later batches
        two = asyncio.run(run(nats_url, clickhouse_migrated_url, batch_size=10, idle_exit=True))
    assert (one.inserted, one.dead_lettered) == (2, 0)
    assert (two.inserted, two.dead_lettered) == (0, 2)
    client = clickhouse.client(clickhouse_migrated_url)
    try:
        stored = client.query("SELECT kind, region FROM events WHERE event_id = %(id)s",
                              parameters={"id": str(first.event_id)}).result_rows
        dead = client.query("SELECT subject, reason FROM events_dead_letter ORDER BY subject").result_rows
    finally:
        client.close()
    assert [tuple(r) for r in stored] == [(first.kind.value, "r1")]     # no FINAL: not even a copy to merge
    assert [(s, r.split(":")[0]) for s, r in dead] == [(other_kind.subject, "conflicting-event-id"),
                                                       (other_region.subject, "conflicting-event-id")]
    assert caplog.text.count("conflicting-event-id") == 2
