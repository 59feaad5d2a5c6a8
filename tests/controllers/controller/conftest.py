from tests.stores.fixtures import nats_server, nats_url, pg_migrated_url, pg_url, postgres_server  # noqa: F401
