"""After ``sco up``: apply the PostgreSQL and ClickHouse migrations and create the JetStream streams."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from sco.stores import clickhouse, migrate, postgres
from sco.stores import nats as sco_nats
from sco.stores.config import StoreUrls

__all__ = ["Prepared", "ensure_streams", "prepare"]


@dataclass(frozen=True)
class Prepared:
    postgres: migrate.MigrationReport
    clickhouse: migrate.MigrationReport
    streams: tuple[str, ...]


async def _streams(url: str) -> tuple[str, ...]:
    nc = await sco_nats.connect(url, name="sco-up", max_reconnect_attempts=3)
    try:
        js = nc.jetstream()
        await sco_nats.ensure_events_stream(js)
        await sco_nats.ensure_deadletter_stream(js)
        return ("SCO_EVENTS", sco_nats.DEADLETTER_STREAM)
    finally:
        await nc.close()


def ensure_streams(url: str) -> tuple[str, ...]:
    return asyncio.run(_streams(url))


def prepare(urls: StoreUrls) -> Prepared:
    """Idempotent: safe on every ``sco up`` and against production URLs."""
    with postgres.connect(urls.postgres, autocommit=True) as conn:
        pg = migrate.migrate_postgres(conn)
    ch_client = clickhouse.client(urls.clickhouse)
    try:
        ch = migrate.migrate_clickhouse(ch_client)
    finally:
        ch_client.close()
    streams = ensure_streams(urls.nats) if urls.nats else ()
    return Prepared(pg, ch, streams)
