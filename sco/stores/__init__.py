"""The shared, typed data-access layer: PostgreSQL (psycopg 3 + pool), ClickHouse (clickhouse-connect),
NATS/JetStream (nats-py), the migrations, the event ingest and the outbox relay.

Controllers, orchestration and the CLI import these modules; they import only ``contracts`` of ours.
Submodules import their drivers lazily, so ``import sco.stores`` is cheap:

- ``sco.stores.config`` — URL resolution (``SCO_*_URL`` environment, then ``$SCO_HOME/stack.json``)
- ``sco.stores.postgres`` — ``pool(url=None)``, ``connect(url=None)``
- ``sco.stores.clickhouse`` — ``client(url=None)``
- ``sco.stores.nats`` — ``connect``, ``ensure_events_stream``, ``publish_event`` (``Nats-Msg-Id`` = event_id)
- ``sco.stores.migrate`` — ``migrate_postgres``, ``migrate_clickhouse``
- ``sco.stores.ingest`` — the JetStream → ClickHouse consumer (``drain`` for a Dagster sensor)
- ``sco.stores.outbox`` — ``enqueue`` inside a transaction, ``Relay``
"""

from .config import StoreNotConfigured, StoreUrls, load_urls, resolve_url, sco_home

__all__ = ["StoreNotConfigured", "StoreUrls", "load_urls", "resolve_url", "sco_home"]
