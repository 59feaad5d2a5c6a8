"""`sco sim history` fills ClickHouse (chDB in process) with a pool history the analytics can rank."""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts.events import Event
from sco.cli import main


@pytest.mark.slow  # a few seconds of CPU: make test runs it, make test-fast does not
def test_sco_sim_history_fills_clickhouse_with_events_and_rate_cards_for_every_pool(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stores import clickhouse

    url = f"chdb://{tmp_path / 'ch'}"
    assert main(["sim", "history", "--days", "2", "--pools", "140", "--seed", "5", "--clickhouse", url,
                 "--start", "2026-03-01"]) == 0
    assert "140 reclaimable pools" in capsys.readouterr().out
    ch = clickhouse.client(url)
    cols = [r[0] for r in ch.query("SELECT name FROM system.columns WHERE table = 'events' "
                                   "AND database = currentDatabase() ORDER BY position").result_rows]
    assert tuple(cols) == tuple(Event.model_fields) or set(cols) == set(Event.model_fields)
    pools, rows, first, last = ch.query(
        "SELECT uniqExact(pool), count(), min(time), max(time) FROM rate_cards").result_rows[0]
    assert pools == 140 and rows == 140 * 288 * 2
    assert str(first).startswith("2026-03-01 00:00") and str(last).startswith("2026-03-02 23:55")
    kinds = dict(ch.query("SELECT kind, count() FROM events GROUP BY kind").result_rows)
    assert {"notice", "terminated", "advisory"} <= set(kinds)
    reclaims, no_notice = ch.query(
        "SELECT countIf(cause LIKE 'reclaimed%' OR cause LIKE 'hall-reclaim%'), "
        "countIf(cause LIKE '%no-notice') FROM events WHERE kind = 'terminated'").result_rows[0]
    instance_hours = ch.query("SELECT sum(instances) * 5 / 60 FROM rate_cards").result_rows[0][0]
    assert 100 * reclaims / instance_hours == pytest.approx(4.0, rel=0.15)
    assert no_notice / reclaims == pytest.approx(0.02, abs=0.01)
    per_pool = ch.query("SELECT pool, count() FROM events WHERE kind = 'terminated' GROUP BY pool").result_rows
    assert len(per_pool) >= 130
    assert ch.query("SELECT count() FROM provider_pools WHERE purchase_model = 'reclaimable'").result_rows[0][0] == 140
    # idempotent re-run of the same seed and days: the ReplacingMergeTree keeps one copy per event_id
    assert main(["sim", "history", "--days", "2", "--pools", "140", "--seed", "5", "--clickhouse", url,
                 "--start", "2026-03-01"]) == 0
    distinct = ch.query("SELECT uniqExact(event_id) FROM events").result_rows[0][0]
    assert distinct == sum(kinds.values())


def test_sco_sim_history_refuses_bad_input_in_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    url = f"chdb://{tmp_path / 'ch'}"
    assert main(["sim", "history", "--days", "0", "--clickhouse", url]) == 2
    assert "--days 0: give at least 1" in capsys.readouterr().err
    assert main(["sim", "history", "--days", "1", "--pools", "-4", "--clickhouse", url]) == 2
    assert "--pools -4" in capsys.readouterr().err
    assert main(["sim", "history", "--days", "1", "--start", "yesterday", "--clickhouse", url]) == 2
    assert "expected YYYY-MM-DD" in capsys.readouterr().err


@pytest.mark.slow  # a few seconds of CPU: make test runs it, make test-fast does not
def test_sco_sim_region_catalogue_writes_a_csv_that_load_catalogue_reads(tmp_path: Path) -> None:
    from contracts.pools import PurchaseModel, load_catalogue

    out = tmp_path / "pools.csv"
    assert main(["sim", "region", "catalogue", "--out", str(out), "--observe-days", "2"]) == 0
    cat = load_catalogue(out)
    reclaimable = [p for p in cat.pools if p.purchase_model is PurchaseModel.RECLAIMABLE]
    assert len(reclaimable) == 141
    rates = sorted(float(p.interruption_rate_pct_h) for p in reclaimable)
    assert rates[0] < 4.0 < rates[-1]  # observed per pool: busier aggregates reclaim more
    assert all(p.business_unit for p in cat.pools if p.purchase_model is PurchaseModel.COMMITTED)
