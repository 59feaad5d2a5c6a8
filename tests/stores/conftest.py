from tests.stores.fixtures import (  # noqa: F401 - pytest fixtures
    clickhouse_migrated_url,
    clickhouse_server,
    clickhouse_url,
    nats_server,
    nats_url,
    pg_migrated_url,
    pg_url,
    postgres_server,
)
