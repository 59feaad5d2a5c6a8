"""After ``sco up``: apply the PostgreSQL and ClickHouse migrations and create the JetStream streams."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from stores import clickhouse, migrate, postgres
from stores import nats as sco_nats
from stores.config import StoreUrls

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
    """Create the events and dead-letter JetStream streams when missing; their names."""
    return asyncio.run(_streams(url))


def _migrate_postgres(url: str | None) -> migrate.MigrationReport:
    """The migrations, as the owner role; then, where ``sco up`` created the component roles, their grants."""
    from .pgroles import grant

    with postgres.connect(url, autocommit=True) as conn:
        report = migrate.migrate_postgres(conn)
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'sco_controller'").fetchone() is not None:
            grant(conn)
        return report


def _migrate_clickhouse(url: str | None) -> migrate.MigrationReport:
    client = clickhouse.client(url)
    try:
        return migrate.migrate_clickhouse(client)
    finally:
        client.close()


def prepare(urls: StoreUrls) -> Prepared:
    """Idempotent: safe on every ``sco up`` and against production URLs. The three stores in parallel."""
    with ThreadPoolExecutor(max_workers=3) as pool:
        pg = pool.submit(_migrate_postgres, urls.postgres)
        ch = pool.submit(_migrate_clickhouse, urls.clickhouse)
        streams = pool.submit(ensure_streams, urls.nats) if urls.nats else None
        return Prepared(pg.result(), ch.result(), streams.result() if streams else ())
