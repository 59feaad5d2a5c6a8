"""Real servers for tests, on free loopback ports, cleaned up afterwards. Reuse them from any test area:

    from tests.stores.fixtures import clickhouse_url, nats_server, pg_url  # noqa: F401 (pytest fixtures)

- ``postgres_server`` (session): one embedded PostgreSQL 18 (fsync off); ``pg_url`` gives each test a fresh
  empty database, ``pg_migrated_url`` one with ``sco db migrate`` applied.
- ``nats_server`` (per test, ~50 ms): nats-server with JetStream in a temp dir; ``.restart()`` / ``.kill()``
  keep the port and the stored streams. ``nats_url`` is its URL.
- ``clickhouse_server`` (session): ``sco clickhouse serve`` over a temp chDB directory; ``clickhouse_url``
  gives each test its own database (``http://127.0.0.1:PORT/?database=t_…``), ``clickhouse_migrated_url``
  one with ``sco clickhouse migrate`` applied.

The classes (``PostgresProcess``, ``NatsProcess``, ``ClickHouseProcess``) work outside pytest too (benches).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sco.stack import services

__all__ = ["ClickHouseProcess", "NatsProcess", "PostgresProcess", "clickhouse_migrated_url", "clickhouse_server",
           "clickhouse_url", "nats_server", "nats_url", "pg_migrated_url", "pg_url", "postgres_server"]


def _tempdir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))


class NatsProcess:
    """nats-server -js on a fixed port across restarts, storing streams under ``data_dir``."""

    def __init__(self, data_dir: Path | None = None, port: int | None = None) -> None:
        self.data_dir = data_dir or _tempdir("sco-nats-")
        self.port = port or services.free_port()
        self.pid: int | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> NatsProcess:
        self.pid = services.start_nats(self.data_dir, self.port).pid
        return self

    def stop(self) -> None:
        if self.pid is not None:
            services.stop_pid(self.pid)
            self.pid = None

    def kill(self) -> None:
        """SIGKILL: no clean shutdown (what a crash looks like)."""
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            services.reap(self.pid)
            self.pid = None

    def restart(self, hard: bool = False) -> None:
        self.kill() if hard else self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)


class PostgresProcess:
    def __init__(self, data_dir: Path | None = None) -> None:
        self.data_dir = data_dir or _tempdir("sco-pg-")
        self.running: services.Running | None = None

    def start(self) -> PostgresProcess:
        self.running = services.start_postgres(self.data_dir, fast=True)
        return self

    @property
    def url(self) -> str:
        assert self.running is not None
        return self.running.url

    def database_url(self, name: str) -> str:
        return self.url.rsplit("/", 1)[0] + f"/{name}"

    def create_database(self) -> str:
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.database_url(name)

    def close(self) -> None:
        services.stop_postgres(self.data_dir)
        shutil.rmtree(self.data_dir, ignore_errors=True)


class ClickHouseProcess:
    def __init__(self, data_dir: Path | None = None) -> None:
        self.data_dir = data_dir or _tempdir("sco-ch-")
        self.running: services.Running | None = None

    def start(self) -> ClickHouseProcess:
        self.running = services.start_clickhouse(self.data_dir)
        return self

    @property
    def url(self) -> str:
        assert self.running is not None
        return self.running.url

    def create_database(self) -> str:
        import urllib.request

        name = f"t_{uuid.uuid4().hex[:12]}"
        request = urllib.request.Request(self.url + "/", data=f"CREATE DATABASE {name}".encode(), method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
        return f"{self.url}/?database={name}"

    def close(self) -> None:
        if self.running is not None:
            services.stop_pid(self.running.pid)
            self.running = None
        shutil.rmtree(self.data_dir, ignore_errors=True)


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


@pytest.fixture
def nats_server() -> Iterator[NatsProcess]:
    server = NatsProcess().start()
    yield server
    server.close()


@pytest.fixture
def nats_url(nats_server: NatsProcess) -> str:
    return nats_server.url


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
