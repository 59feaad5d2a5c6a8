"""Plain-SQL migrations for PostgreSQL and ClickHouse.

Every ``*.sql`` under ``migrations/<store>/`` in
lexical order, each applied once and recorded in ``schema_migrations`` with its SHA-256.

Numbering: ``0001``–``0199`` belong to the stack (this package); other parts add their own files from
``0200`` up (e.g. ``0200_pool_history.sql``). Files must be idempotent (``IF NOT EXISTS``) so that a
partially applied file can be rerun. A recorded file whose text changed is reported, not reapplied.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .sqlsplit import split_statements

__all__ = ["MIGRATIONS", "Migration", "MigrationReport", "migrate_clickhouse", "migrate_postgres", "pending"]

MIGRATIONS = Path(__file__).with_name("migrations")


@dataclass(frozen=True)
class Migration:
    """One migration file: its name and SQL text."""

    name: str
    sql: str

    @property
    def checksum(self) -> str:
        """The SHA-256 of the SQL text, recorded when applied."""
        return hashlib.sha256(self.sql.encode()).hexdigest()


@dataclass(frozen=True)
class MigrationReport:
    """What a migration run did: files applied, files already applied, and recorded files that changed since."""

    applied: tuple[str, ...]
    skipped: tuple[str, ...]
    changed: tuple[str, ...]  # applied before with a different text: edit a new file instead


def pending(store: str, directory: Path | None = None) -> list[Migration]:
    """Every migration of ``store`` (``postgres`` or ``clickhouse``), in lexical order."""
    folder = directory or MIGRATIONS / store
    return [Migration(p.name, p.read_text()) for p in sorted(folder.glob("*.sql"))]


def _plan(migrations: list[Migration], done: dict[str, str]) -> tuple[list[Migration], list[str], list[str]]:
    todo = [m for m in migrations if m.name not in done]
    skipped = [m.name for m in migrations if m.name in done]
    changed = [m.name for m in migrations if m.name in done and done[m.name] != m.checksum]
    return todo, skipped, changed


def migrate_postgres(conn: Any, directory: Path | None = None) -> MigrationReport:
    """Apply pending PostgreSQL migrations, one transaction per file, under an advisory lock.

    ``conn`` must be in autocommit mode (``stores.postgres.connect(autocommit=True)``).
    """
    if not conn.autocommit:
        raise ValueError("migrate_postgres needs an autocommit connection: connect(url, autocommit=True)")
    if conn.execute("SELECT to_regclass('schema_migrations')").fetchone()[0] is not None:
        # nothing pending: no DDL at all, so a component role without CREATE (analytics) may call this too
        done = {r[0]: r[1] for r in conn.execute("SELECT name, checksum FROM schema_migrations").fetchall()}
        todo, skipped, changed = _plan(pending("postgres", directory), done)
        if not todo:
            return MigrationReport((), tuple(skipped), tuple(changed))
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(7300)")
        conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, "
                     "checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
    done = {r[0]: r[1] for r in conn.execute("SELECT name, checksum FROM schema_migrations").fetchall()}
    todo, skipped, changed = _plan(pending("postgres", directory), done)
    for migration in todo:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(7300)")
            conn.execute(migration.sql)
            conn.execute("INSERT INTO schema_migrations (name, checksum) VALUES (%s, %s) "
                         "ON CONFLICT (name) DO NOTHING", (migration.name, migration.checksum))
    return MigrationReport(tuple(m.name for m in todo), tuple(skipped), tuple(changed))


def migrate_clickhouse(client: Any, directory: Path | None = None) -> MigrationReport:
    """Apply pending ClickHouse migrations statement by statement (no transactions: files are idempotent)."""
    client.command("CREATE TABLE IF NOT EXISTS schema_migrations (name String, checksum String, "
                   "applied_at DateTime64(3, 'UTC') DEFAULT now64(3)) ENGINE = ReplacingMergeTree ORDER BY name")
    rows = client.query("SELECT name, argMax(checksum, applied_at) FROM schema_migrations GROUP BY name").result_rows
    done = {str(r[0]): str(r[1]) for r in rows}
    todo, skipped, changed = _plan(pending("clickhouse", directory), done)
    for migration in todo:
        for statement in split_statements(migration.sql):
            client.command(statement)
        client.command("INSERT INTO schema_migrations (name, checksum) VALUES ({name:String}, {checksum:String})",
                       parameters={"name": migration.name, "checksum": migration.checksum})
    return MigrationReport(tuple(m.name for m in todo), tuple(skipped), tuple(changed))
