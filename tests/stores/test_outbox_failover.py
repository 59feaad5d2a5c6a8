"""The outbox relay (stores/outbox.py) across a PostgreSQL failover (issue 18), on the Patroni bed
(deploy/testbed/patroni/up, tests/support/patroni.py): ``outbox.relay`` given the multi-host URL, the primary's
PostgreSQL SIGKILLed after a batch was published and before it was marked sent. The relay logs PG001, reconnects to
the promoted standby on its next batch and carries on: every committed row reaches JetStream once (the republished
batch dropped as duplicates), every action is audited once, and nothing is left unsent."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from contracts.subjects import EVENTS_STREAM, EventKind
from stores import clickhouse, migrate, outbox, postgres
from stores import nats as sco_nats
from tests.stores.helpers import make_event
from tests.support.patroni import PatroniCluster

pytestmark = [pytest.mark.testbed, pytest.mark.services, pytest.mark.xdist_group("patroni")]
ROWS, BATCH = 120, 10


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PatroniCluster]:
    with PatroniCluster(Path(tmp_path_factory.mktemp("patroni-relay")), scope="sco-relay") as c:
        yield c


def _unsent(url: str) -> int:
    with postgres.connect(url, autocommit=True) as conn:
        return int(conn.execute("SELECT count(*) FROM outbox WHERE sent_at IS NULL OR "
                                "(action IS NOT NULL AND audited_at IS NULL)").fetchone()[0])


async def _relay_until_settled(cluster: PatroniCluster, nats_url: str, clickhouse_url: str) -> tuple[str, str]:
    """Run ``outbox.relay`` (no ``once``: it retries) until the outbox is settled; the third batch's publish kills
    the primary. Returns the killed and the promoted member."""
    url, batches, killed = cluster.url(), [0], [""]

    def after_publish(ids: list[int]) -> None:
        batches[0] += 1
        if batches[0] == 3:
            leader = cluster.leader()
            assert leader is not None
            cluster.kill_postgres(leader)
            killed[0] = leader.name

    task = asyncio.create_task(outbox.relay(url, nats_url, clickhouse_url, batch_size=BATCH,
                                            after_publish=after_publish))
    deadline = time.monotonic() + 45
    while not killed[0] or await asyncio.to_thread(_settled, url):
        assert time.monotonic() < deadline and not task.done(), f"the relay did not settle: {cluster.roles()}"
        await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    leader = cluster.leader()
    return killed[0], leader.name if leader else ""


def _settled(url: str) -> bool:
    """True while the outbox still has work (or no primary answers yet)."""
    try:
        return _unsent(url) > 0
    except Exception:
        return True


def test_killing_the_primary_between_publish_and_mark_sent_loses_and_doubles_nothing(
        cluster: PatroniCluster, nats_url: str, clickhouse_migrated_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    url = cluster.url()
    with postgres.connect(url, autocommit=True) as conn:
        migrate.migrate_postgres(conn)
        for i in range(ROWS):
            kind = EventKind.LAUNCHED if i % 2 else EventKind.PLACED
            outbox.enqueue(conn, make_event(i, kind=kind), action="launch" if i % 2 else None, actor="controller/r1")
    killed, promoted = asyncio.run(_relay_until_settled(cluster, nats_url, clickhouse_migrated_url))
    assert killed and promoted and promoted != killed        # Patroni promoted the standby
    assert _unsent(url) == 0
    assert any(r.getMessage().startswith(f"{postgres.LOST} outbox relay") for r in caplog.records)
    assert any(r.getMessage().startswith(postgres.RECONNECTED) for r in caplog.records)

    async def stream_messages() -> int:
        nc = await sco_nats.connect(nats_url)
        info = await nc.jetstream().stream_info(EVENTS_STREAM)
        await nc.close()
        return int(info.state.messages)

    assert asyncio.run(stream_messages()) == ROWS            # the republished batch dropped as duplicates
    client = clickhouse.client(clickhouse_migrated_url)
    try:
        assert client.command("SELECT count() FROM audit_actions FINAL") == ROWS // 2
    finally:
        client.close()
