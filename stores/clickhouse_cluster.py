"""The ClickHouse migrations rendered for a cluster (``sco clickhouse migrate --cluster NAME --print``).

One host (chDB, a single server) runs the migration files as they are. A ClickHouse cluster with ClickHouse
Keeper runs the same files rendered here, statement by statement:

* ``CREATE TABLE t (...) ENGINE = <X>MergeTree[(args)] …`` becomes a replicated local table on every host,
  ``t_local ON CLUSTER c … ENGINE = Replicated<X>MergeTree('/clickhouse/tables/{shard}/{database}/t_local',
  '{replica}'[, args])``, and ``t`` a ``Distributed`` table over it, sharded by a hash of the sorting key, so
  every copy of one row (one ``event_id``) lands on one shard and ``ReplacingMergeTree``/``FINAL`` still collapse
  them. Readers and writers keep using ``t``.
* ``CREATE MATERIALIZED VIEW v TO t AS SELECT … FROM s`` runs per shard: ``TO t_local … FROM s_local``. A view
  whose source is not such a table (``events_ingest``, a Null table a client inserts into) runs on every host as
  written: it writes into the Distributed ``t``, which routes each row to its shard, and reads the Distributed
  tables it names.
* ``CREATE TABLE x AS t ENGINE = Null`` (a table that keeps nothing, for its views) is created on every host.
* ``ALTER TABLE t …`` alters ``t_local`` and ``t`` on the cluster (a column added to both); ``TRUNCATE TABLE t``
  empties ``t_local`` on the cluster.
* ``INSERT INTO t SELECT …`` (a backfill) runs once, as written, through the Distributed tables.

Pure text in, text out; the test parses every rendered statement with the engine's own parser (chDB
``formatQuery``).
"""

from __future__ import annotations

import re
from pathlib import Path

from .errors import ClusterRenderError
from .migrate import pending
from .sqlsplit import split_statements

__all__ = ["ClusterRenderError", "render_for_cluster", "render_migrations"]

_NAME = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
_CREATE = re.compile(r"^\s*CREATE TABLE IF NOT EXISTS (\w+)\s*\(", re.I | re.M)
_ENGINE = re.compile(r"\bENGINE\s*=\s*(\w*MergeTree)(\(([^()]*)\))?", re.I)
_ORDER = re.compile(r"\bORDER BY\s+(\([^()]*\)|[\w.]+)", re.I)
_VIEW = re.compile(r"^\s*CREATE MATERIALIZED VIEW IF NOT EXISTS (\w+) TO (\w+) AS", re.I | re.M)
_ALTER = re.compile(r"^\s*ALTER TABLE (\w+)\s", re.I | re.M)
_NULL = re.compile(r"\A\s*CREATE TABLE IF NOT EXISTS (\w+) AS (\w+) ENGINE = Null\s*\Z", re.I)
_TRUNCATE = re.compile(r"\A\s*TRUNCATE TABLE (?:IF EXISTS )?(\w+)\s*\Z", re.I)
_BACKFILL = re.compile(r"\A\s*INSERT INTO \w+\s+SELECT\b", re.I)
_SOURCE = re.compile(r"\bFROM\s+(\w+)", re.I)


def _local(name: str) -> str:
    return f"{name}_local"


def _create_table(statement: str, cluster: str) -> list[str]:
    head = _CREATE.search(statement)
    engine = _ENGINE.search(statement)
    order = _ORDER.search(statement)
    if head is None or engine is None or order is None:
        raise ClusterRenderError(f"a CREATE TABLE without a MergeTree engine and ORDER BY: {statement[:120]!r}")
    table = head.group(1)
    path = f"'/clickhouse/tables/{{shard}}/{{database}}/{_local(table)}', '{{replica}}'"
    args = engine.group(3)
    replicated = f"ENGINE = Replicated{engine.group(1)}({path}{', ' + args if args else ''})"
    local = (statement[:head.start(1)] + f"{_local(table)} ON CLUSTER {cluster}"
             + statement[head.end(1):engine.start()] + replicated + statement[engine.end():])
    key = order.group(1)
    shard = f"cityHash64({key[1:-1] if key.startswith('(') else key})"
    distributed = (f"CREATE TABLE IF NOT EXISTS {table} ON CLUSTER {cluster} AS {_local(table)}\n"
                   f"ENGINE = Distributed({cluster}, currentDatabase(), {_local(table)}, {shard})")
    return [local, distributed]


def _create_view(statement: str, cluster: str, tables: set[str]) -> list[str]:
    head = _VIEW.search(statement)
    if head is None:
        raise ClusterRenderError(f"a materialized view without TO: {statement[:120]!r}")
    view, target = head.group(1), head.group(2)
    body = statement[head.end():]
    source = _SOURCE.search(body)
    if source is None or source.group(1) not in tables:  # over a per-host table: as written, on every host
        return [f"CREATE MATERIALIZED VIEW IF NOT EXISTS {view} ON CLUSTER {cluster} TO {target} AS{body}"]
    for table in tables:  # the view reads what is inserted into this shard's local table
        body = re.sub(rf"\bFROM\s+{table}\b", f"FROM {_local(table)}", body, flags=re.I)
    return [f"CREATE MATERIALIZED VIEW IF NOT EXISTS {view} ON CLUSTER {cluster} TO {_local(target)} AS{body}"]


def _alter(statement: str, cluster: str) -> list[str]:
    head = _ALTER.search(statement)
    if head is None:
        raise ClusterRenderError(f"an ALTER without a table: {statement[:120]!r}")
    table, rest = head.group(1), statement[head.end():]
    return [f"ALTER TABLE {name} ON CLUSTER {cluster} {rest}" for name in (_local(table), table)]


def render_for_cluster(sql: str, cluster: str, tables: set[str] | None = None) -> list[str]:
    """The statements of one migration file for ``cluster`` (``tables``: the tables created so far, filled in)."""
    if not _NAME.match(cluster):
        raise ClusterRenderError(f"cluster name {cluster!r}: letters, digits and _ only (as in remote_servers)")
    known = tables if tables is not None else set()
    out: list[str] = []
    for statement in split_statements(sql):
        code = "\n".join(line for line in statement.splitlines() if not line.lstrip().startswith("--")).strip()
        if _CREATE.search(code):
            out += _create_table(code, cluster)
            known.add(_CREATE.search(code).group(1))  # type: ignore[union-attr]
        elif _VIEW.search(code):
            out += _create_view(code, cluster, known)
        elif _ALTER.search(code):
            out += _alter(code, cluster)
        elif (null := _NULL.match(code)) is not None:
            out.append(f"CREATE TABLE IF NOT EXISTS {null.group(1)} ON CLUSTER {cluster} AS {null.group(2)} "
                       "ENGINE = Null")
        elif (truncate := _TRUNCATE.match(code)) is not None and truncate.group(1) in known:
            out.append(f"TRUNCATE TABLE IF EXISTS {_local(truncate.group(1))} ON CLUSTER {cluster}")
        elif _BACKFILL.match(code):
            out.append(code)
        else:
            raise ClusterRenderError(f"no cluster form for: {code[:120]!r}")
    return out


def render_migrations(cluster: str, directory: Path | None = None) -> list[tuple[str, list[str]]]:
    """Every ClickHouse migration file, in order, rendered for ``cluster``: (file name, statements)."""
    tables: set[str] = set()
    return [(m.name, render_for_cluster(m.sql, cluster, tables)) for m in pending("clickhouse", directory)]
