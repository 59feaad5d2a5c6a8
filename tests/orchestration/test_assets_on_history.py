"""Every asset materialised on 90 days of simulated pool history against the embedded ClickHouse, the checks,
the worked example through the real pipeline (events → savings_attribution → dbt), co-reclamation groups,
and corrupted inputs that make the checks fail with a clear message. One session: the history and dbt are
run once (the ``materialised`` fixture, ``helpers.materialise_everything``)."""

from __future__ import annotations

import json
import stat
import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from orchestration.attribution import LINES, ledger_costs, net_saving

from . import worked_example as ex
from .helpers import HISTORY_DAYS, Stack, attribute_hour_assets

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("orchestration-history")]  # shares the materialised history


def _checks(result: Any) -> dict[str, Any]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def test_every_asset_materialises_on_90_days_of_simulated_history(materialised: Stack) -> None:
    assert materialised.history.days == HISTORY_DAYS and materialised.history.events > 100_000
    results = materialised.results or {}
    for name in ("core", "attribution", "daily", "archive"):
        assert results[name].success, name
    materialised_keys = {
        k.to_user_string() for r in results.values() if hasattr(r, "get_asset_materialization_events")
        for k in (e.asset_key for e in r.get_asset_materialization_events())}
    assert {"pool_catalogue", "pool_rankings", "correlation_groups", "advisory_precision", "savings_attribution",
            "contract_breaches", "recommendations", "cost_archive", "finance/fct_savings_ledger",
            "finance/fct_showback_monthly", "finance/fct_finance_export", "finance/dim_workload",
            "finance/dim_pool", "finance/dbt_docs"} <= materialised_keys
    unit = results["dbt_unit"]
    assert unit.returncode == 0, unit.stdout[-3000:]


def test_the_asset_checks_pass_on_the_history(materialised: Stack) -> None:
    results = materialised.results or {}
    evaluations = {**_checks(results["core"]), **_checks(results["attribution"])}
    assert set(evaluations) == {"rankings_cover_every_active_pool", "ranking_scores_in_range",
                                "ledger_has_no_negative_hours", "ledger_balances_check"}
    for name, evaluation in evaluations.items():
        assert evaluation.passed, f"{name}: {evaluation.description}"


def test_rankings_are_kept_with_their_inputs_and_published_in_force(materialised: Stack) -> None:
    ch = materialised.ch()
    (generation, pools, inputs), = ch.rows("SELECT generation, count(), any(inputs) FROM rankings "
                                           "GROUP BY generation ORDER BY generation DESC LIMIT 1")
    replay = json.loads(inputs)
    assert {"rate_eur_h", "guaranteed_rate_eur_h", "interruption_rate_pct_h", "mean_time_between_h",
            "forward_share", "quota_headroom", "reclaims", "instance_hours", "group"} <= set(replay)
    active = ch.rows("SELECT count() FROM provider_pools FINAL WHERE purchase_model = 'reclaimable'")[0][0]
    assert pools == active
    with materialised.pg().connection() as conn:
        in_force = conn.execute("SELECT count(*), min(rank), max(rank), min(generation), max(generation) "
                                "FROM rankings_in_force WHERE region = 'r1'").fetchone()
    assert in_force == (active, 1, active, generation, generation)
    # replayable: every stored score is recomputed exactly from its stored inputs
    from dataclasses import fields

    from orchestration.scoring import PoolInputs, score

    names = {f.name for f in fields(PoolInputs)}
    for stored, raw in ch.rows("SELECT score, inputs FROM rankings WHERE generation = {g:UInt64}", {"g": generation}):
        assert score(PoolInputs(**{k: v for k, v in json.loads(raw).items() if k in names})) == stored
    # the simulated region reclaims ~4 %/h; the 30-day rates must be in that neighbourhood, not zero
    rates = [float(r[0]) for r in ch.rows(
        "SELECT interruption_rate_pct_h FROM rankings WHERE generation = {g:UInt64} AND pool NOT LIKE '%wx%'",
        {"g": generation})]
    assert 1.0 < sum(rates) / len(rates) < 10.0


def test_drill_events_are_excluded_from_scoring(materialised: Stack) -> None:
    from orchestration.rankings import gather_inputs
    from orchestration.store import latest_event_time

    ch = materialised.ch()
    now = latest_event_time(ch, "r1")
    assert now is not None
    pool = ch.rows("SELECT pool FROM provider_pools FINAL WHERE purchase_model = 'reclaimable' "
                   "AND pool NOT LIKE '%wx%' ORDER BY pool LIMIT 1")[0][0]
    before = {i.pool: i for i in gather_inputs(ch, "r1", now)}[pool]
    drills = [{"event_id": str(uuid.uuid4()), "kind": "notice", "time": now - timedelta(hours=1), "region": "r1",
               "partition": "", "pool": pool, "instance": f"drill-{i}", "workload": "", "contract_version": "",
               "cause": "drill", "drill": True, "source": "test", "attributes": "{}"} for i in range(50)]
    ch.insert("events", [list(d.values()) for d in drills], list(drills[0]))
    try:
        after = {i.pool: i for i in gather_inputs(ch, "r1", now)}[pool]
        assert after.reclaims == before.reclaims
        assert after.interruption_rate_pct_h == before.interruption_rate_pct_h
    finally:
        ch.command("ALTER TABLE events DELETE WHERE source = 'test' SETTINGS mutations_sync = 1")


def test_the_worked_example_is_reproduced_to_the_cent_through_events_attribution_and_dbt(
        materialised: Stack) -> None:
    ch = materialised.ch()
    day = {"d0": ex.DAY.replace(tzinfo=None), "d1": (ex.DAY + timedelta(days=1)).replace(tzinfo=None)}
    cols = list(ex.EXPECTED)
    sums = ", ".join(f"sum({c})" for c in cols)
    asset_row = ch.rows(f"SELECT {sums} FROM savings_ledger FINAL WHERE workload = 'etl' "
                        "AND hour >= {d0:DateTime} AND hour < {d1:DateTime}", day)[0]
    got = {c: Decimal(v).quantize(Decimal("0.01")) for c, v in zip(cols, asset_row, strict=True)}
    assert got == ex.EXPECTED
    dbt_cols = [c for c in cols if c not in ("defect_wasted_eur",)] + ["defect_wasted_eur"]
    dbt_row = ch.rows(f"SELECT {', '.join(f'sum({c})' for c in dbt_cols)} FROM fct_savings_ledger "
                      "WHERE workload = 'etl' AND hour >= {d0:DateTime} AND hour < {d1:DateTime}", day)[0]
    assert {c: Decimal(v).quantize(Decimal("0.01")) for c, v in zip(dbt_cols, dbt_row, strict=True)} == ex.EXPECTED
    month = ch.rows("SELECT net_saving_eur, label FROM fct_showback_monthly WHERE workload = 'etl'")
    assert [(Decimal(n).quantize(Decimal("0.01")), label) for n, label in month] == \
        [(Decimal("56.44"), "rate-card saving")]


def test_every_dbt_ledger_row_balances_by_the_python_identity(materialised: Stack) -> None:
    cols = [*LINES, "costs_eur", "counterfactual_eur", "net_saving_eur"]
    rows = [dict(zip(cols, (Decimal(str(v)) for v in r), strict=True))
            for r in materialised.ch().rows(f"SELECT {', '.join(cols)} FROM fct_savings_ledger")]
    assert rows and all(r["costs_eur"] == ledger_costs(r, Decimal(0)) for r in rows)
    assert all(r["net_saving_eur"] == net_saving(r["counterfactual_eur"], r["costs_eur"]) for r in rows)


def test_the_monthly_archive_is_parquet_with_a_manifest_and_read_only(materialised: Stack) -> None:
    import pyarrow.parquet as pq

    folder = materialised.root / "archive" / "r1" / ex.DAY.strftime("%Y-%m")
    manifest = json.loads((folder / "manifest.json").read_text())
    table = pq.read_table(folder / "cost_attribution.parquet")
    assert manifest["files"]["cost_attribution"]["rows"] == table.num_rows > 0
    assert set(table.column("workload").to_pylist()) == {"etl"}
    assert not (folder / "savings_ledger.parquet").stat().st_mode & stat.S_IWUSR


def test_pools_the_region_reclaims_together_end_in_one_group_and_independent_pools_stay_apart(
        materialised: Stack) -> None:
    """Learned from the events alone: every pool starts in its own group (no topology), and phi over 90 days
    of ten-minute windows must rebuild the host aggregates the simulated region reclaims by."""
    from orchestration.catalogue import load_catalogue
    from orchestration.groups import compute_groups
    from orchestration.store import latest_event_time

    ch = materialised.ch()
    now = latest_event_time(ch, "r1")
    assert now is not None
    every = load_catalogue(ch, "r1", "reclaimable")
    learned = compute_groups(ch, "r1", now, 90, topology={p.pool: p.pool for p in every})
    aggregate = {p.pool: p.aggregate for p in every}
    pools = [p for p in every if "wx" not in p.pool]  # the worked example's pool has no reclaims
    busiest: dict[str, list[str]] = {}
    for p in sorted(pools, key=lambda p: p.vcpu):  # small flavours: the most instances, the most evidence
        if "gpu" not in p.pool:
            busiest.setdefault(p.aggregate, []).append(p.pool)
    together = [names[:2] for names in busiest.values() if len(names) >= 2]
    assert together
    for a, b in together:
        assert learned.group_of[a] == learned.group_of[b], (a, b, learned.max_phi[a])
    for group, members in learned.members().items():
        assert len({aggregate[m] for m in members}) == 1, f"group {group} mixes aggregates: {members}"
    # the daily asset (topology + phi) keeps every aggregate whole and records its evidence
    with materialised.pg().connection() as conn:
        in_force = dict(conn.execute("SELECT pool, group_id FROM correlation_groups").fetchall())
    for a, b in together:
        assert in_force[a] == in_force[b]


def test_a_pool_missing_from_the_rankings_fails_the_coverage_check_with_its_name(materialised: Stack) -> None:
    from orchestration.defs.rankings.checks import rankings_cover_every_active_pool

    ch = materialised.ch()
    generation, pool = ch.rows("SELECT generation, pool FROM rankings ORDER BY generation DESC, pool LIMIT 1")[0]
    kept = ch.rows("SELECT * FROM rankings WHERE generation = {g:UInt64} AND pool = {p:String}",
                   {"g": generation, "p": pool})
    ch.command("ALTER TABLE rankings DELETE WHERE generation = {g:UInt64} AND pool = {p:String} "
               "SETTINGS mutations_sync = 1", {"g": generation, "p": pool})
    try:
        result = rankings_cover_every_active_pool(clickhouse=ch, settings=materialised.resources()["settings"])
        assert not result.passed
        assert "misses 1 active pool(s)" in (result.description or "") and pool in (result.description or "")
    finally:
        from orchestration.rankings import RANKING_COLUMNS

        ch.insert("rankings", kept, RANKING_COLUMNS)
    assert rankings_cover_every_active_pool(clickhouse=ch, settings=materialised.resources()["settings"]).passed


def test_negative_hours_fail_the_ledger_check_with_a_clear_message(materialised: Stack) -> None:
    from dagster import materialize

    from orchestration.defs.attribution.assets import savings_attribution

    ch = materialised.ch()
    hour = ex.DAY + timedelta(hours=5)
    bad = {"event_id": str(uuid.uuid4()), "kind": "lost", "time": hour + timedelta(minutes=1), "region": "r1",
           "partition": "k8s-a", "pool": ex.RC, "instance": "rc-7", "workload": "etl", "contract_version": "etl@3",
           "cause": "reclaimed", "drill": False, "source": "corrupt", "attributes": json.dumps({"wasted_s": -7200})}
    ch.insert("events", [list(bad.values())], list(bad))

    def attribute_the_hour() -> Any:
        return materialize(attribute_hour_assets(), resources=materialised.resources(),
                           selection=[savings_attribution], partition_key=hour.strftime("%Y-%m-%d-%H:00"),
                           raise_on_error=False)

    try:
        check = _checks(attribute_the_hour())["ledger_has_no_negative_hours"]
        assert not check.passed
        assert "negative hours in savings_ledger: wasted_hours < 0 in 1 row(s)" in (check.description or "")
        assert "etl@" in (check.description or "")
    finally:
        ch.command("ALTER TABLE events DELETE WHERE source = 'corrupt' SETTINGS mutations_sync = 1")
    assert _checks(attribute_the_hour())["ledger_has_no_negative_hours"].passed


def test_advisory_precision_matches_what_the_simulated_region_promises(materialised: Stack) -> None:
    """The region advises ~65 % of reclaims (recall) and an advised instance is then reclaimed (precision)."""
    ch = materialised.ch()
    advisories, followed, reclaims, advised = ch.rows(
        "SELECT sum(advisories), sum(followed), sum(reclaims), sum(advised_reclaims) FROM advisory_precision")[0]
    assert reclaims > 1000
    assert 0.5 < advised / reclaims < 0.8
    assert followed / advisories > 0.8


def test_contract_breaches_and_recommendations_are_recorded_for_the_contracts_in_force(materialised: Stack) -> None:
    ch = materialised.ch()
    (workload, measured, declared, breach, owner), = ch.rows(
        "SELECT workload, measured_rate_pct_h, declared_rate_pct_h, breach, owner FROM contract_breaches FINAL "
        "ORDER BY computed_at DESC LIMIT 1")
    assert (workload, measured, declared, breach, owner) == ("etl", 0.0, 2.0, False, "data-eng")
    (direction, reason), = ch.rows("SELECT direction, reason FROM recommendations FINAL WHERE workload = 'etl' "
                                   "ORDER BY computed_at DESC LIMIT 1")
    assert direction == "stay" and reason


def test_merges_are_recorded_in_clickhouse_with_their_evidence(materialised: Stack) -> None:
    from orchestration.catalogue import load_catalogue
    from orchestration.groups import compute_groups, write_groups
    from orchestration.store import latest_event_time

    ch = materialised.ch()
    now = latest_event_time(ch, "r1")
    assert now is not None
    every = load_catalogue(ch, "r1", "reclaimable")
    topology = {p.pool: p.pool for p in every}  # a catalogue that knows nothing of aggregates
    learned = compute_groups(ch, "r1", now, 90, topology=topology)
    write_groups(ch, "r1", now + timedelta(seconds=1), learned, topology)
    rows = ch.rows("SELECT kind, pools, phi, joint_windows, windows FROM correlation_group_changes "
                   "WHERE computed_at = {t:DateTime64(3)}", {"t": now + timedelta(seconds=1)})
    assert {kind for kind, *_ in rows} <= {"merge", "cross-hall"}  # a cross-hall edge is recorded, not merged
    assert rows and all(len(pools) == 2 and phi >= 0.1 and joint >= 10 and min(windows) >= joint
                        for kind, pools, phi, joint, windows in rows)


def test_the_event_sensor_requests_a_ranking_when_the_ingest_lands_events_and_skips_otherwise(
        materialised: Stack) -> None:
    from dagster import RunRequest, SkipReason, build_sensor_context

    from contracts.events import Event
    from orchestration.defs.ingest.sensors import new_events_sensor

    ch = materialised.ch()
    first = new_events_sensor(build_sensor_context(cursor=None, resources={"clickhouse": ch}), clickhouse=ch)
    assert isinstance(first, RunRequest)
    cursor = first.run_key
    same = new_events_sensor(build_sensor_context(cursor=cursor, resources={"clickhouse": ch}), clickhouse=ch)
    assert isinstance(same, SkipReason)

    # what the ingest service (`sco ingest`) does when an event arrives: a row in ClickHouse's events
    event = Event(kind="notice", time=ex.DAY + timedelta(hours=1), region="r1", pool=ex.RC, instance="rc-9",  # type: ignore[arg-type]
                  workload="etl", cause="reclaimed", source="sensor-test")
    row = event.row()
    ch.insert("events", [list(row.values())], list(row))
    try:
        moved = new_events_sensor(build_sensor_context(cursor=cursor, resources={"clickhouse": ch}), clickhouse=ch)
    finally:
        ch.command("ALTER TABLE events DELETE WHERE source = 'sensor-test' SETTINGS mutations_sync = 1")
    assert isinstance(moved, RunRequest) and moved.run_key != cursor


def test_a_range_read_once_gives_the_same_ledger_as_reading_hour_by_hour(materialised: Stack) -> None:
    from orchestration.backfill import read_range
    from orchestration.ledger import attribute_hour, read_hour

    ch = materialised.ch()
    start = ex.DAY - timedelta(hours=2)  # two empty hours before the worked example's day, then the day
    ranged = [attribute_hour(i) for i in read_range(ch, "r1", start, ex.DAY + timedelta(days=1))]
    hourly = [attribute_hour(read_hour(ch, "r1", start + timedelta(hours=h))) for h in range(26)]
    assert ranged == hourly
    assert sum(len(lines) for lines in ranged) == 24


def test_the_marts_finance_reads_pass_their_expectation_suites_on_the_history(materialised: Stack) -> None:
    evaluations = _checks((materialised.results or {})["daily"])
    suites = {n: e for n, e in evaluations.items() if n.endswith("_expectations")}
    assert set(suites) == {"fct_savings_ledger_expectations", "fct_showback_monthly_expectations",
                           "fct_finance_export_expectations"}
    for name, evaluation in suites.items():
        assert evaluation.passed, f"{name}: {evaluation.description}"
    ledger_rows = materialised.ch().rows("SELECT count() FROM fct_savings_ledger")[0][0]
    assert ledger_rows > 0 and suites["fct_savings_ledger_expectations"].metadata["rows"].value == ledger_rows


def test_the_finance_docs_site_is_generated_with_every_mart_column_described(materialised: Stack) -> None:
    import json

    site = materialised.root / "dbt-docs"
    index = site / "static_index.html"
    assert index.stat().st_size > 100_000  # the one-file site embeds the manifest and the catalogue
    manifest = json.loads((site / "manifest.json").read_text())
    marts = [n for n in manifest["nodes"].values() if n["resource_type"] == "model" and "marts" in n["fqn"]]
    assert {m["name"] for m in marts} >= {"fct_savings_ledger", "fct_showback_monthly", "fct_finance_export",
                                          "dim_pool", "dim_workload"}
    undocumented = [f"{m['name']}.{c}" for m in marts for c, col in m["columns"].items()
                    if not col.get("description", "").strip()]
    assert undocumented == []
    catalog = json.loads((site / "catalog.json").read_text())
    assert {n.split(".")[-1] for n in catalog["nodes"]} >= {m["name"] for m in marts}  # the tables were read


def test_a_mart_that_lost_rows_fails_its_row_count_expectation(materialised: Stack) -> None:
    from orchestration.defs.finance.checks import CHECKS

    ch = materialised.ch()
    scratch = "fct_finance_export_kept"
    ch.command(f"CREATE TABLE {scratch} AS fct_finance_export")
    try:
        ch.command(f"INSERT INTO {scratch} SELECT * FROM fct_finance_export")
        ch.command("DELETE FROM fct_finance_export WHERE workload = (SELECT any(workload) FROM fct_finance_export)")
        check = next(c for c in CHECKS if "fct_finance_export" in str(c.check_keys))
        evaluation = check(clickhouse=materialised.ch())  # the check alone, as its schedule runs it after dbt
        assert not evaluation.passed and "expected from the upstream mart" in (evaluation.description or "")
    finally:
        ch.command("TRUNCATE TABLE fct_finance_export")
        ch.command(f"INSERT INTO fct_finance_export SELECT * FROM {scratch}")
        ch.command(f"DROP TABLE {scratch}")
