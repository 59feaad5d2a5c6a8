"""The one PostgreSQL for tests: an embedded PostgreSQL 18 (fsync off) for the whole session.

``postgres_server`` (session) starts it; ``pg_url`` gives each test a fresh empty database, ``pg_migrated_url``
one with ``sco db migrate`` applied. ``PostgresProcess`` works outside pytest too (benches).

Authentication is on, as in ``sco up``: SCRAM over loopback only; the URLs carry the superuser's generated
password (the component roles and their grants are ``sco up``'s, tested in ``tests/security``).
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from pathlib import Path

from sco.stack import services

__all__ = ["PostgresProcess"]


class PostgresProcess:
    def __init__(self, data_dir: Path | None = None) -> None:
        self.data_dir = data_dir or Path(tempfile.mkdtemp(prefix="sco-pg-"))
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
