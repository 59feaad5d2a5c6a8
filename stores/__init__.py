"""The shared, typed data-access layer.

PostgreSQL (psycopg 3 + pool), ClickHouse (clickhouse-connect), NATS/JetStream (nats-py), the
migrations, the event ingest and the outbox relay.

Controllers, orchestration and the CLI import these modules; they import only ``contracts`` of ours.
Submodules import their drivers lazily, so ``import stores`` is cheap:

- ``stores.config`` — URL resolution (``SCO_*_URL`` environment, then ``$SCO_HOME/stack.json``)
- ``stores.postgres`` — ``pool(url=None)``, ``connect(url=None, reconnect=False)`` (multi-host URLs; ``reconnect``: a
  connection replaced on its next use after a failover)
- ``stores.clickhouse`` — ``client(url=None)``
- ``stores.nats`` — ``connect``, ``ensure_events_stream``, ``publish_event`` (``Nats-Msg-Id`` = event_id)
- ``stores.migrate`` — ``migrate_postgres``, ``migrate_clickhouse``
- ``stores.ingest`` — the JetStream → ClickHouse consumer (``drain`` for a Dagster sensor), built on
  ``stores.pull`` (batch pulls, one-write acks), ``stores.eventrows`` (validation, rows, the time window)
  and ``stores.deadletter`` (dead letters, whole or as a reference); ``stores.startup`` (the ingest process's
  start-up: what it keeps from importing, how long it took)
- ``stores.outbox`` — ``enqueue`` inside a transaction, ``Relay``
"""

from .config import StoreNotConfigured, StoreUrls, load_urls, resolve_url, sco_home

__all__ = ["StoreNotConfigured", "StoreUrls", "load_urls", "resolve_url", "sco_home"]
