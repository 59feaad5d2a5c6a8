"""The ingest under the faults of issue 15, on a real nats-server and the ClickHouse front end: it never
wedges, and it never acknowledges an event it did not store."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

import orjson
import pytest
from clickhouse_connect.driver.exceptions import DatabaseError

from contracts.events import Event
from contracts.subjects import EVENTS_STREAM
from stores import clickhouse, eventids
from stores import nats as sco_nats
from stores.deadletter import PREFIX_BYTES, REFERENCE_HEADER
from stores.errors import IngestDisconnected, InsertNotConfirmed
from stores.ingest import CONSUMER, Ingest, run
from tests.stores.helpers import make_event

WITHIN = 240.0  # seconds; the old ingest looped forever here


async def _publish(url: str, events: Sequence[Event], raw: Sequence[tuple[str, bytes, str]] = ()) -> int:
    nc = await sco_nats.connect(url)
    js = nc.jetstream()
    await sco_nats.ensure_events_stream(js)
    for event in events:
        await sco_nats.publish_event(js, event)
    for subject, payload, msg_id in raw:
        await sco_nats.publish_raw(js, subject, payload, msg_id)
    max_payload = int(nc.max_payload)
    await nc.close()
    return max_payload


async def _consumer(url: str) -> tuple[int, int]:
    nc = await sco_nats.connect(url)
    info = await nc.jetstream().consumer_info(EVENTS_STREAM, CONSUMER)
    await nc.close()
    return int(info.num_pending), int(info.num_ack_pending)


async def _dead_letters(url: str) -> list[Any]:
    nc = await sco_nats.connect(url)
    js = nc.jetstream()
    info = await js.stream_info(sco_nats.DEADLETTER_STREAM)
    out = [await js.get_msg(sco_nats.DEADLETTER_STREAM, seq) for seq in range(1, info.state.last_seq + 1)]
    await nc.close()
    return out


def _count(url: str, sql: str) -> int:
    client = clickhouse.client(url)
    try:
        return int(client.command(sql))
    finally:
        client.close()


def test_an_invalid_event_just_under_max_payload_is_dead_lettered_as_a_reference_and_the_stream_moves_on(
        nats_url: str, clickhouse_migrated_url: str) -> None:
    max_payload = asyncio.run(_publish(nats_url, [make_event(i) for i in range(5)]))
    poison = json.dumps({"kind": "no-such-kind", "pad": "x" * (max_payload - 300)}).encode()
    asyncio.run(_publish(nats_url, [make_event(i) for i in range(5, 10)], [("sco.events.r1.placed", poison, "p")]))

    ingest = asyncio.run(asyncio.wait_for(run(nats_url, clickhouse_migrated_url, batch_size=4, idle_exit=True),
                                          WITHIN))

    assert (ingest.inserted, ingest.dead_lettered) == (10, 1)
    assert asyncio.run(_consumer(nats_url)) == (0, 0)
    [letter] = asyncio.run(_dead_letters(nats_url))
    assert letter.headers[REFERENCE_HEADER] == "1"
    reference = json.loads(letter.data)
    assert (reference["stream"], reference["sequence"], reference["size"]) == (EVENTS_STREAM, 11, len(poison))
    assert reference["reason"].startswith("not a valid event: kind: Input should be")
    assert reference["prefix"] == poison[:PREFIX_BYTES].decode() and len(letter.data) < 4 * PREFIX_BYTES
    assert _count(clickhouse_migrated_url, "SELECT length(payload) FROM events_dead_letter") == len(poison)


def test_a_small_dead_letter_still_carries_the_whole_original(
        nats_url: str, clickhouse_migrated_url: str) -> None:
    asyncio.run(_publish(nats_url, [], [("sco.events.r1.placed", b"{not json", "bad")]))
    asyncio.run(asyncio.wait_for(run(nats_url, clickhouse_migrated_url, idle_exit=True), WITHIN))
    [letter] = asyncio.run(_dead_letters(nats_url))
    assert letter.data == b"{not json" and REFERENCE_HEADER not in letter.headers


def test_a_nats_connection_closed_for_good_ends_the_loop_with_ing001_instead_of_retrying_forever(
        nats_url: str, clickhouse_migrated_url: str) -> None:
    async def scenario() -> None:
        nc = await sco_nats.connect(nats_url)
        client = clickhouse.client(clickhouse_migrated_url)
        ingest = Ingest(nc.jetstream(), client, fetch_timeout=0.2)
        await ingest.start()
        await nc.close()  # what nats-py does after any -ERR from the server: closed, never reopened
        try:
            await asyncio.wait_for(ingest.run(), WITHIN)
        finally:
            client.close()

    with pytest.raises(IngestDisconnected, match="ING001"):
        asyncio.run(scenario())


def test_events_dated_1971_9999_or_two_hours_ahead_are_dead_lettered_with_the_time_window_reason(
        nats_url: str, clickhouse_migrated_url: str) -> None:
    now = dt.datetime.now(dt.UTC)
    times = [now - dt.timedelta(days=1), dt.datetime(1971, 1, 1, tzinfo=dt.UTC),
             dt.datetime(9999, 1, 1, tzinfo=dt.UTC), now + dt.timedelta(hours=2)]
    events = [make_event(i).model_copy(update={"time": t}) for i, t in enumerate(times)]
    asyncio.run(_publish(nats_url, events))

    ingest = asyncio.run(asyncio.wait_for(run(nats_url, clickhouse_migrated_url, idle_exit=True), WITHIN))

    assert (ingest.inserted, ingest.dead_lettered) == (1, 3)
    client = clickhouse.client(clickhouse_migrated_url)
    reasons = [r[0] for r in client.query("SELECT reason FROM events_dead_letter ORDER BY stream_seq").result_rows]
    client.close()
    assert all(r.startswith("time outside the sane window") for r in reasons), reasons
    assert "before 2000-01-01" in reasons[0] and "more than 1 h after now" in reasons[2]


async def _settle_all(url: str, client: Any, n: int) -> None:
    nc = await sco_nats.connect(url)
    ingest = Ingest(nc.jetstream(), client, fetch_timeout=0.5)
    await ingest.start()
    for _ in range(120):  # the nak'ed batch comes back after its 1 s delay
        await ingest.step()
        if ingest.inserted >= n:
            break
    await nc.close()


def test_a_clickhouse_error_about_the_server_not_the_rows_is_retried_never_dead_lettered_and_acknowledged(
        nats_url: str, clickhouse_migrated_url: str) -> None:
    """The acked-but-missing cause (docs/stack.md): a whole batch dead-lettered for the server's state."""
    n = 50
    asyncio.run(_publish(nats_url, [make_event(i) for i in range(n)]))
    client = clickhouse.client(clickhouse_migrated_url)
    client.command("RENAME TABLE events TO events_away")  # UNKNOWN_TABLE: the server's state, not the data

    async def first_attempt() -> None:
        nc = await sco_nats.connect(nats_url)
        ingest = Ingest(nc.jetstream(), client, fetch_timeout=2)
        await ingest.start()
        try:
            await ingest.step()
        finally:
            await nc.close()

    with pytest.raises(DatabaseError, match="Code: 60"):
        asyncio.run(first_attempt())
    assert client.command("SELECT count() FROM events_dead_letter") == 0
    assert sum(asyncio.run(_consumer(nats_url))) == n  # nothing acknowledged or terminated

    client.command("RENAME TABLE events_away TO events")
    asyncio.run(_settle_all(nats_url, client, n))
    assert client.command("SELECT count() FROM events FINAL") == n
    client.close()
    assert asyncio.run(_consumer(nats_url)) == (0, 0)


class _HalfStored:
    """A front end that answers 200 but stores (and reports) only the first half of every insert."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def __getattr__(self, name: str) -> Any:  # every other call (the event-id comparison) goes to the real client
        return getattr(self.client, name)

    def raw_insert(self, table: str, columns: Any, body: bytes, **kwargs: Any) -> Any:
        if table != eventids.INGEST_TABLE:
            return self.client.raw_insert(table, columns, body, **kwargs)
        data = orjson.loads(body)  # the ingest sends columns (JSONCompactColumns)
        half = [column[: max(1, len(column) // 2)] for column in data]
        return self.client.raw_insert(table, columns, orjson.dumps(half), **kwargs)


def test_a_batch_is_acknowledged_only_when_clickhouse_confirmed_every_row(
        nats_url: str, clickhouse_migrated_url: str) -> None:
    n = 40
    asyncio.run(_publish(nats_url, [make_event(i) for i in range(n)]))
    client = clickhouse.client(clickhouse_migrated_url)

    async def half() -> None:
        nc = await sco_nats.connect(nats_url)
        ingest = Ingest(nc.jetstream(), _HalfStored(client), fetch_timeout=2)
        await ingest.start()
        try:
            await ingest.step()
        finally:
            await nc.close()

    with pytest.raises(InsertNotConfirmed, match=f"ING002: ClickHouse confirmed {n // 2} of {n} rows"):
        asyncio.run(half())
    assert sum(asyncio.run(_consumer(nats_url))) == n
    asyncio.run(_settle_all(nats_url, client, n))
    assert client.command("SELECT count(DISTINCT event_id) FROM events") == n
    client.close()


def _closing_connect(closed_first: int) -> Any:
    """``stores.nats.connect`` whose first ``closed_first`` connections arrive closed (as after a -ERR)."""
    real = sco_nats.connect
    calls = {"n": 0}

    async def connect(*args: Any, **kwargs: Any) -> Any:
        nc = await real(*args, **kwargs)
        calls["n"] += 1
        if calls["n"] <= closed_first:
            await nc.close()
        return nc

    return connect


def test_the_ingest_opens_a_new_connection_when_nats_closed_its_own(
        nats_url: str, clickhouse_migrated_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    asyncio.run(_publish(nats_url, [make_event(i) for i in range(20)]))
    monkeypatch.setattr(sco_nats, "connect", _closing_connect(2))
    ingest = asyncio.run(asyncio.wait_for(run(nats_url, clickhouse_migrated_url, idle_exit=True), WITHIN))
    assert ingest.inserted == 20


def test_sco_ingest_exits_3_with_ing001_when_reconnecting_does_not_help(
        nats_url: str, clickhouse_migrated_url: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from stores import ingest as ingest_module

    monkeypatch.setattr(sco_nats, "connect", _closing_connect(100))
    monkeypatch.setattr(ingest_module, "BACKOFF_S", 0.0)
    assert ingest_module.main(["--nats", nats_url, "--clickhouse", clickhouse_migrated_url, "--once"]) == 3
    assert "sco-ingest: ING001: the NATS connection is closed" in capsys.readouterr().out
