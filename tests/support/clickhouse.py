"""The one ClickHouse for tests: ``sco clickhouse serve`` over a temp chDB directory for the whole session.

``clickhouse_server`` (session) starts it; ``clickhouse_url`` gives each test its own database
(``http://127.0.0.1:PORT/?database=t_…``), ``clickhouse_migrated_url`` one with ``sco clickhouse migrate``
applied. ``ClickHouseProcess`` works outside pytest too (benches) and for tests that restart the front end.
"""

from __future__ import annotations

import shutil
import tempfile
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sco.stack import services

__all__ = ["ClickHouseProcess", "clickhouse_migrated_url", "clickhouse_server", "clickhouse_url"]


class ClickHouseProcess:
    def __init__(self, data_dir: Path | None = None, port: int | None = None) -> None:
        self.data_dir = data_dir or Path(tempfile.mkdtemp(prefix="sco-ch-"))
        self.port = port
        self.running: services.Running | None = None

    def start(self) -> ClickHouseProcess:
        self.running = services.start_clickhouse(self.data_dir, self.port)
        self.port = self.running.port  # a restart comes back on the same port
        return self

    @property
    def url(self) -> str:
        assert self.running is not None
        return self.running.url

    def create_database(self) -> str:
        name = f"t_{uuid.uuid4().hex[:12]}"
        request = urllib.request.Request(self.url + "/", data=f"CREATE DATABASE {name}".encode(), method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
        return f"{self.url}/?database={name}"

    def stop(self) -> None:
        if self.running is not None:
            services.stop_pid(self.running.pid)
            self.running = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)


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
