"""The ClickHouse migrations rendered for a cluster: every statement parses with the engine's own parser, every
table is a replicated local table with a Distributed table over it sharded by its sorting key."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from stores.clickhouse_cluster import ClusterRenderError, render_for_cluster, render_migrations
from stores.migrate import pending


def _parses(statement: str) -> str:
    import chdb

    literal = "'" + statement.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return str(chdb.query(f"SELECT formatQuery({literal})", "TSVRaw")).strip()


def test_every_rendered_statement_parses_with_the_clickhouse_engine() -> None:
    statements = [s for _, group in render_migrations("sco_cluster") for s in group]
    assert len(statements) > 20
    for statement in statements:
        formatted = _parses(statement)
        assert "ON CLUSTER sco_cluster" in formatted or formatted.startswith("INSERT INTO event_ids SELECT"), \
            formatted[:200]  # DDL on every host; the one backfill once, through the Distributed tables


def test_each_table_becomes_a_replicated_local_table_and_a_distributed_one_sharded_by_its_sorting_key() -> None:
    created = {m.group(1) for mig in pending("clickhouse") for m in re.finditer(
        r"CREATE TABLE IF NOT EXISTS (\w+)\s*\(", mig.sql)}  # tables of rows (not events_ingest, AS events Null)
    assert {"events", "event_ids", "rankings"} <= created
    rendered = "\n".join(s for _, group in render_migrations("c1") for s in group)
    for table in created:
        local = (rf"CREATE TABLE IF NOT EXISTS {table}_local ON CLUSTER c1 \(.*?ENGINE = Replicated\w*MergeTree"
                 rf"\('/clickhouse/tables/{{shard}}/{{database}}/{table}_local', '{{replica}}'")
        assert re.search(local, rendered, re.S), table
        assert f"CREATE TABLE IF NOT EXISTS {table} ON CLUSTER c1 AS {table}_local" in rendered, table
    assert ("ENGINE = Distributed(c1, currentDatabase(), events_local, cityHash64(region, kind, event_id))"
            in rendered)  # every copy of one event on one shard: FINAL still collapses them


@pytest.mark.parametrize(("sql", "expected"), [
    ("CREATE TABLE IF NOT EXISTS t (a UInt8, v DateTime) ENGINE = ReplacingMergeTree(v) ORDER BY a;",
     "ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/t_local', '{replica}', v)"),
    ("CREATE TABLE IF NOT EXISTS t (a UInt8) ENGINE = MergeTree ORDER BY a;",
     "ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/{database}/t_local', '{replica}')"),
    ("ALTER TABLE t ADD COLUMN IF NOT EXISTS b UInt8 DEFAULT 0;",
     "ALTER TABLE t ON CLUSTER c ADD COLUMN IF NOT EXISTS b UInt8 DEFAULT 0"),
])
def test_engines_keep_their_arguments_and_alters_reach_both_tables(sql: str, expected: str) -> None:
    out = render_for_cluster(sql, "c")
    assert any(expected in s for s in out), out
    if sql.startswith("ALTER"):
        assert out[0].startswith("ALTER TABLE t_local ON CLUSTER c ADD COLUMN")


def test_the_ingest_table_and_its_view_are_per_host_over_the_distributed_tables_and_event_ids_per_shard() -> None:
    rendered = dict(render_migrations("c1"))["0006_event_ids_view.sql"]
    assert rendered[0] == "TRUNCATE TABLE IF EXISTS event_ids_local ON CLUSTER c1"
    assert rendered[1].startswith("CREATE MATERIALIZED VIEW IF NOT EXISTS event_ids_of_events ON CLUSTER c1 TO "
                                  "event_ids_local AS") and "FROM events_local" in rendered[1]
    assert rendered[2].startswith("INSERT INTO event_ids\nSELECT") and rendered[2].endswith("FROM events")
    assert rendered[3] == "CREATE TABLE IF NOT EXISTS events_ingest ON CLUSTER c1 AS events ENGINE = Null"
    assert rendered[4].startswith("CREATE MATERIALIZED VIEW IF NOT EXISTS events_of_new_ids ON CLUSTER c1 TO events "
                                  "AS")  # the Distributed events: each row to its shard
    assert "FROM event_ids WHERE" in rendered[4] and "_local" not in rendered[4]  # ids looked up on every shard


def test_a_statement_without_a_cluster_form_or_a_bad_cluster_name_is_refused_with_the_statement() -> None:
    with pytest.raises(ClusterRenderError, match="no cluster form for: 'INSERT INTO t VALUES"):
        render_for_cluster("INSERT INTO t VALUES (1);", "c")
    with pytest.raises(ClusterRenderError, match="cluster name 'a;b'"):
        render_for_cluster("ALTER TABLE t ADD COLUMN b UInt8;", "a;b")


def test_sco_clickhouse_migrate_prints_the_cluster_ddl_and_refuses_cluster_without_print() -> None:
    run = subprocess.run([sys.executable, "-m", "sco", "clickhouse", "migrate", "--cluster", "prod", "--print"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("-- 0001_events.sql\n") and "ON CLUSTER prod" in run.stdout
    bad = subprocess.run([sys.executable, "-m", "sco", "clickhouse", "migrate", "--cluster", "prod"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--cluster NAME and --print go together" in bad.stderr


def test_an_alter_whose_table_name_ends_its_line_alters_the_local_and_the_distributed_table() -> None:
    from stores.clickhouse_cluster import render_for_cluster

    out = render_for_cluster("ALTER TABLE strategy_months\n    ADD COLUMN IF NOT EXISTS x Float64 DEFAULT 0;", "sco")
    assert [" ".join(s.split()) for s in out] == [
        "ALTER TABLE strategy_months_local ON CLUSTER sco ADD COLUMN IF NOT EXISTS x Float64 DEFAULT 0",
        "ALTER TABLE strategy_months ON CLUSTER sco ADD COLUMN IF NOT EXISTS x Float64 DEFAULT 0"]
