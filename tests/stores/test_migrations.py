"""`sco db migrate` and `sco clickhouse migrate`: plain SQL in lexical order, once each, idempotent."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest

from sco.cli import main
from stores import clickhouse, migrate, postgres
from stores.sqlsplit import split_statements
from tests.stores.helpers import make_event

FLEET_TABLES = {"instances", "plans", "claims", "contracts_in_force", "rankings_in_force", "exclusions",
                "correlation_groups", "spend_reservations", "spends", "breakers", "partition_leases", "outbox"}


def test_sco_db_migrate_creates_the_fleet_state_schema_and_a_second_run_changes_nothing(
        pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    files = len(migrate.pending("postgres"))  # ours (0001-0199) and other parts' (0200+)
    assert main(["db", "migrate", "--url", pg_url]) == 0
    assert f"applied {files} (0001_fleet_state.sql" in capsys.readouterr().out
    assert main(["db", "migrate", "--url", pg_url]) == 0
    assert f"applied 0 (none), already applied {files}" in capsys.readouterr().out
    with psycopg.connect(pg_url) as conn:
        tables = {r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'").fetchall()}
    assert tables >= FLEET_TABLES


def test_the_spend_ledger_keeps_money_as_exact_numeric(pg_migrated_url: str) -> None:
    with postgres.connect(pg_migrated_url) as conn:
        rid = uuid.uuid4()
        conn.execute("INSERT INTO spend_reservations (reservation_id, workload, region, amount_eur, window_start, "
                     "window_end) VALUES (%s, 'w1', 'r1', %s, now(), now() + interval '24 hours')",
                     (rid, Decimal("100.10")))
        for _ in range(3):
            conn.execute("INSERT INTO spends (spend_id, reservation_id, workload, region, amount_eur, spent_at) "
                         "VALUES (%s, %s, 'w1', 'r1', %s, now())", (uuid.uuid4(), rid, Decimal("0.1")))
        total = conn.execute("SELECT sum(amount_eur) FROM spends").fetchone()
        assert total is not None and total[0] == Decimal("0.3")
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("INSERT INTO spends (spend_id, workload, region, amount_eur, spent_at) "
                         "VALUES (%s, 'w1', 'r1', -1, now())", (uuid.uuid4(),))


def test_migrations_from_other_parts_numbered_from_0200_run_after_ours_in_lexical_order(
        pg_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "postgres"
    folder.mkdir()
    for m in migrate.pending("postgres"):
        if m.name < "0200":
            (folder / m.name).write_text(m.sql)
    (folder / "0200_pool_history.sql").write_text(
        "CREATE TABLE IF NOT EXISTS pool_rates (pool text PRIMARY KEY, rate_eur_h numeric(12, 6));\n"
        "INSERT INTO pool_rates SELECT 'p', 1 WHERE EXISTS (SELECT 1 FROM instances LIMIT 0) OR true "
        "ON CONFLICT DO NOTHING;")
    with postgres.connect(pg_url, autocommit=True) as conn:
        report = migrate.migrate_postgres(conn, folder)
        assert report.applied[-1] == "0200_pool_history.sql"
        assert list(report.applied) == sorted(report.applied)
        (folder / "0200_pool_history.sql").write_text("SELECT 1;")
        again = migrate.migrate_postgres(conn, folder)
    assert again.applied == () and again.changed == ("0200_pool_history.sql",)


def test_sco_clickhouse_migrate_creates_events_with_exactly_the_event_row_columns(
        clickhouse_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["clickhouse", "migrate", "--url", clickhouse_url]) == 0
    assert main(["clickhouse", "migrate", "--url", clickhouse_url]) == 0
    assert "applied 0 (none)" in capsys.readouterr().out
    client = clickhouse.client(clickhouse_url)
    columns = [r[0] for r in client.query("DESCRIBE TABLE events").result_rows]
    assert columns == list(make_event(1).row())
    engine = client.command("SELECT engine_full FROM system.tables WHERE database = currentDatabase() "
                            "AND name = 'events'")
    assert "ReplacingMergeTree" in engine and "event_id" in engine and "400" in engine
    tables = {r[0] for r in client.query("SHOW TABLES").result_rows}
    assert {"events", "events_dead_letter", "rankings", "rankings_monthly", "cost_attribution",
            "audit_actions", "schema_migrations"} <= tables
    client.close()


def test_the_events_table_collapses_copies_of_one_event(clickhouse_migrated_url: str) -> None:
    client = clickhouse.client(clickhouse_migrated_url)
    row = make_event(5).row()
    for _ in range(3):
        client.insert("events", [list(row.values())], column_names=list(row))
    assert client.command("SELECT count() FROM events FINAL") == 1
    client.command("OPTIMIZE TABLE events FINAL")
    assert client.command("SELECT count() FROM events") == 1
    client.close()


def test_rankings_roll_up_into_the_monthly_aggregate(clickhouse_migrated_url: str) -> None:
    client = clickhouse.client(clickhouse_migrated_url)
    at = datetime(2026, 11, 3, tzinfo=UTC)
    rows = [[at, 1, "r1", "p1", rank, 0.5, 1.0, 0.3, 10.0, False, "{}"] for rank in (1, 3)]
    client.insert("rankings", rows, column_names=["ranked_at", "generation", "region", "pool", "rank", "score",
                                                  "interruption_rate_pct_h", "discount", "depth", "excluded",
                                                  "inputs"])
    got = client.query("SELECT sum(samples), sum(rank_sum) FROM rankings_monthly WHERE pool = 'p1'").result_rows
    assert got == [(2, 4)]
    client.close()


def test_statements_are_split_on_semicolons_outside_strings_and_comments() -> None:
    sql = "CREATE TABLE a (x String DEFAULT ';');\n-- a comment; with a semicolon\nSELECT 'it''s; ok' /* ; */;\n\n"
    assert split_statements(sql) == ["CREATE TABLE a (x String DEFAULT ';')",
                                     "-- a comment; with a semicolon\nSELECT 'it''s; ok' /* ; */"]


def test_the_postgres_pool_hands_out_connections_to_the_configured_database(
        pg_migrated_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCO_POSTGRES_URL", pg_migrated_url)
    with postgres.pool(max_size=2) as pool, pool.connection() as conn:
        conn.execute("INSERT INTO breakers (region, partition, name, state) VALUES ('r1', 'p1', 'termination', 'open')")
    with postgres.pool() as pool, pool.connection() as conn:
        assert conn.execute("SELECT state FROM breakers").fetchall() == [("open",)]


def test_the_ranking_in_force_holds_a_reclaim_forecast_in_range_or_none(pg_migrated_url: str) -> None:
    from orchestration.forecast.history import PoolForecast
    from orchestration.rankings import in_force_rows
    from orchestration.scoring import PoolInputs, rank_pools

    now = datetime(2026, 3, 1, tzinfo=UTC)
    ranked = rank_pools([PoolInputs(p, 1.0, 2.0, 1.0, None, 0.5) for p in ("a", "b")])
    forecast = {"a": PoolForecast(0.04, {"60": {"notice": 0.039, "no_notice": 0.001}}, "hgb-1")}
    insert = ("INSERT INTO rankings_in_force (region, pool, rank, score, generation, ranked_at, inputs, reclaim_p_1h, "
              "reclaim_p, model_version) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)")
    with psycopg.connect(pg_migrated_url, autocommit=True) as conn:
        for row in in_force_rows("r1", now, ranked, forecast):
            conn.execute(insert, row)
        rows = conn.execute("SELECT pool, reclaim_p_1h, reclaim_p, model_version FROM rankings_in_force "
                            "ORDER BY pool").fetchall()
        assert rows == [("a", 0.04, {"60": {"notice": 0.039, "no_notice": 0.001}}, "hgb-1"), ("b", None, None, None)]
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute(insert, ("r1", "c", 3, 0.5, 1, now, "{}", 1.5, None, None))
