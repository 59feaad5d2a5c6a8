"""The ClickHouse fixtures (registered in tests/conftest.py): one front end a session, a fresh database a test;
the process itself is ``testkit.clickhouse`` (benches use it too).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testkit.clickhouse import ClickHouseProcess

__all__ = ["clickhouse_migrated_url", "clickhouse_server", "clickhouse_url"]


@pytest.fixture(scope="session")
def clickhouse_server() -> Iterator[ClickHouseProcess]:
    server = ClickHouseProcess().start()
    yield server
    server.close()


@pytest.fixture
def clickhouse_url(clickhouse_server: ClickHouseProcess) -> str:
    return clickhouse_server.create_database()


@pytest.fixture
def clickhouse_migrated_url(clickhouse_url: str) -> str:
    from stores import clickhouse, migrate

    client = clickhouse.client(clickhouse_url)
    try:
        migrate.migrate_clickhouse(client)
    finally:
        client.close()
    return clickhouse_url
