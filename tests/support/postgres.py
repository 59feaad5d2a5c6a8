"""The PostgreSQL fixtures (registered in tests/conftest.py): one server a session, a fresh database a test;
the process itself is ``testkit.postgres`` (benches use it too).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from testkit.postgres import PostgresProcess

__all__ = ["migrated_connections", "pg_migrated_url", "pg_url", "postgres_server"]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresProcess]:
    server = PostgresProcess().start()
    yield server
    server.close()


@pytest.fixture
def pg_url(postgres_server: PostgresProcess) -> str:
    return postgres_server.create_database()


@pytest.fixture
def pg_migrated_url(pg_url: str) -> str:
    from stores import migrate, postgres

    with postgres.connect(pg_url, autocommit=True) as conn:
        migrate.migrate_postgres(conn)
    return pg_url


@contextmanager
def migrated_connections(server: PostgresProcess, n: int) -> Iterator[list[Any]]:
    """``n`` autocommit connections, each to a fresh migrated database of ``server``; closed on the way out."""
    import psycopg

    from stores import migrate

    conns = [psycopg.connect(server.create_database(), autocommit=True) for _ in range(n)]
    try:
        for c in conns:
            migrate.migrate_postgres(c)
        yield conns
    finally:
        for c in conns:
            c.close()
