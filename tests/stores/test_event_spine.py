"""The event spine on real servers: JetStream dedup, dead-lettering, the outbox relay and its crash point."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest

from contracts.events import Event
from contracts.subjects import EVENTS_STREAM, EventKind
from sco.cli import main
from sco.stack import services
from stores import clickhouse, migrate, outbox, postgres
from stores import nats as sco_nats
from stores.ingest import CONSUMER, drain, run
from testkit.clickhouse import ClickHouseProcess
from testkit.paths import REPO
from tests.stores.helpers import make_event


async def _publish(url: str, events: Sequence[Event],
                   raw: Sequence[tuple[str, bytes, str]] = ()) -> list[bool]:
    nc = await sco_nats.connect(url)
    js = nc.jetstream()
    await sco_nats.ensure_events_stream(js)
    dups = [bool((await sco_nats.publish_event(js, e)).duplicate) for e in events]
    for subject, payload, msg_id in raw:
        await sco_nats.publish_raw(js, subject, payload, msg_id)
    await nc.close()
    return dups


async def _stream_info(url: str, stream: str = EVENTS_STREAM) -> tuple[int, int]:
    nc = await sco_nats.connect(url)
    js = nc.jetstream()
    info = await js.stream_info(stream)
    pending = 0
    if stream == EVENTS_STREAM:
        pending = (await js.consumer_info(EVENTS_STREAM, CONSUMER)).num_pending
    await nc.close()
    return int(info.state.messages), int(pending)


def test_republishing_an_event_is_dropped_by_the_stream_as_a_duplicate(nats_url: str) -> None:
    event = make_event(1)
    assert asyncio.run(_publish(nats_url, [event, event, make_event(2)])) == [False, True, False]
    nc_messages = asyncio.run(_count(nats_url))
    assert nc_messages == 2


async def _count(url: str) -> int:
    nc = await sco_nats.connect(url)
    info = await nc.jetstream().stream_info(EVENTS_STREAM)
    await nc.close()
    return int(info.state.messages)


def test_a_malformed_event_is_dead_lettered_with_its_reason_and_the_stream_moves_on(
        nats_url: str, clickhouse_migrated_url: str) -> None:
    good = [make_event(i) for i in range(10)]
    raw = [("sco.events.r1.placed", b"{not json", "bad-1"),
           ("sco.events.r1.placed", json.dumps({"event_id": "x", "kind": "no-such-kind"}).encode(), "bad-2")]
    asyncio.run(_publish(nats_url, good[:5], raw))
    asyncio.run(_publish(nats_url, good[5:]))
    ingest = asyncio.run(run(nats_url, clickhouse_migrated_url, batch_size=4, idle_exit=True))
    assert (ingest.inserted, ingest.dead_lettered) == (10, 2)

    client = clickhouse.client(clickhouse_migrated_url)
    assert client.command("SELECT count() FROM events FINAL") == 10
    dead = client.query("SELECT msg_id, reason FROM events_dead_letter ORDER BY msg_id").result_rows
    client.close()
    assert [d[0] for d in dead] == ["bad-1", "bad-2"]
    assert "not a valid event" in dead[0][1]
    assert "event_id: Input should be a valid UUID" in dead[1][1] and "kind: Input should be" in dead[1][1]
    assert asyncio.run(_stream_info(nats_url)) == (12, 0)  # nothing left pending: not retried forever
    assert asyncio.run(_stream_info(nats_url, sco_nats.DEADLETTER_STREAM))[0] == 2


def _enqueue(pg_url: str, n: int) -> None:
    with postgres.connect(pg_url) as conn:
        for i in range(n):
            kind = EventKind.LAUNCHED if i % 2 else EventKind.PLACED
            event = make_event(i, kind=kind)
            outbox.enqueue(conn, event, action="launch" if kind == EventKind.LAUNCHED else None, actor="controller/r1")
        conn.commit()


def test_the_outbox_relay_publishes_committed_rows_marks_them_sent_and_audits_actions(
        pg_migrated_url: str, nats_url: str, clickhouse_migrated_url: str) -> None:
    _enqueue(pg_migrated_url, 20)
    with postgres.connect(pg_migrated_url) as conn:  # an uncommitted row is not relayed
        outbox.enqueue(conn, make_event(99))
        worker = asyncio.run(outbox.relay(pg_migrated_url, nats_url, clickhouse_migrated_url, once=True))
        conn.rollback()
    assert (worker.published, worker.duplicates, worker.audited) == (20, 0, 10)
    with postgres.connect(pg_migrated_url) as conn:
        assert conn.execute("SELECT count(*) FROM outbox WHERE sent_at IS NULL").fetchone() == (0,)
    client = clickhouse.client(clickhouse_migrated_url)
    audited = client.query("SELECT action, actor, count() FROM audit_actions FINAL GROUP BY action, actor").result_rows
    client.close()
    assert audited == [("launch", "controller/r1", 10)]
    assert asyncio.run(_count(nats_url)) == 20


CRASHING_RELAY = textwrap.dedent("""
    import asyncio, os, signal, sys
    from stores import outbox

    def die(ids):  # published and acknowledged by JetStream, not yet marked sent
        print(f"published {len(ids)}", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(outbox.relay(sys.argv[1], sys.argv[2], sys.argv[3], once=True, after_publish=die))
""")


def test_killing_the_relay_between_publish_and_mark_sent_duplicates_nothing_downstream(
        pg_migrated_url: str, nats_url: str, clickhouse_migrated_url: str) -> None:
    _enqueue(pg_migrated_url, 50)
    crashed = subprocess.run([sys.executable, "-c", CRASHING_RELAY, pg_migrated_url, nats_url,
                              clickhouse_migrated_url], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert crashed.returncode == -9 and "published 50" in crashed.stdout, crashed.stderr
    with postgres.connect(pg_migrated_url) as conn:  # the marking never committed
        assert conn.execute("SELECT count(*) FROM outbox WHERE sent_at IS NULL").fetchone() == (50,)

    worker = asyncio.run(outbox.relay(pg_migrated_url, nats_url, clickhouse_migrated_url, once=True))
    assert (worker.published, worker.duplicates) == (50, 50)  # every republish dropped by JetStream
    assert asyncio.run(_count(nats_url)) == 50
    ingest = asyncio.run(run(nats_url, clickhouse_migrated_url, idle_exit=True))
    assert ingest.inserted == 50
    client = clickhouse.client(clickhouse_migrated_url)
    assert client.command("SELECT count() FROM events") == 50  # no FINAL: no duplicate row at all
    assert client.command("SELECT count() FROM audit_actions FINAL") == 25
    client.close()


def test_drain_ingests_what_is_waiting_and_returns_for_a_dagster_sensor(
        nats_url: str, clickhouse_migrated_url: str) -> None:
    asyncio.run(_publish(nats_url, [make_event(i) for i in range(7)]))
    assert drain(nats_url, clickhouse_migrated_url) == 7
    assert drain(nats_url, clickhouse_migrated_url) == 0
    client = clickhouse.client(clickhouse_migrated_url)
    assert client.command("SELECT count() FROM events") == 7
    client.close()


def test_sco_outbox_relay_and_sco_ingest_commands_move_outbox_rows_into_clickhouse(
        pg_migrated_url: str, nats_url: str, clickhouse_migrated_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _enqueue(pg_migrated_url, 6)
    assert main(["outbox", "relay", "--once", "--postgres", pg_migrated_url, "--nats", nats_url,
                 "--clickhouse", clickhouse_migrated_url]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == {
        "published": 6, "duplicates": 0, "audited": 3}
    assert main(["ingest", "--once", "--nats", nats_url, "--clickhouse", clickhouse_migrated_url]) == 0
    assert "inserted 6 events, dead-lettered 0" in capsys.readouterr().out


# restarts a server on the port it held: never beside another test that takes a port the moment it looks free
@pytest.mark.xdist_group("port-restarts")
def test_ingest_waits_out_a_clickhouse_outage_and_loses_nothing(nats_url: str, tmp_path: Path) -> None:
    front = ClickHouseProcess(tmp_path / "ch", services.free_port()).start()  # one users file for both starts
    url = front.url
    client = clickhouse.client(url)
    migrate.migrate_clickhouse(client)
    client.close()
    n = 20_000
    asyncio.run(_publish_raw_events(nats_url, n))

    async def ingest_across_the_outage() -> tuple[int, int]:
        stop = asyncio.Event()
        task = asyncio.create_task(run(nats_url, url, batch_size=200, stop=stop))
        while await asyncio.to_thread(_count_rows, url) == 0:
            await asyncio.sleep(0.02)
        await asyncio.to_thread(front.stop)  # ClickHouse goes away mid-run
        await asyncio.sleep(1.5)
        await asyncio.to_thread(front.start)  # same port, same users
        for _ in range(300):
            if await asyncio.to_thread(_count_rows, url) >= n:
                break
            await asyncio.sleep(0.1)
        stop.set()
        ingest = await task
        stored = await asyncio.to_thread(_count_rows, url)
        await asyncio.to_thread(front.stop)
        return ingest.inserted, stored

    inserted, stored = asyncio.run(ingest_across_the_outage())
    assert stored == n
    assert inserted >= n


async def _publish_raw_events(url: str, n: int) -> None:
    nc = await sco_nats.connect(url)
    js = nc.jetstream()
    await sco_nats.ensure_events_stream(js)
    for start in range(0, n, 1000):
        events = [make_event(i) for i in range(start, min(n, start + 1000))]
        await asyncio.gather(*(sco_nats.publish_event(js, e) for e in events))
    await nc.close()


def _count_rows(url: str) -> int:
    try:
        client = clickhouse.client(url)
    except Exception:
        return 0
    try:
        return int(client.command("SELECT count(DISTINCT event_id) FROM events"))
    finally:
        client.close()
