"""The code location as SRE meets it, loaded as Dagster loads it: every schedule and sensor running by default,
a freshness check with its promised lag on each asset that promises a cadence, the sensor that evaluates them,
the checks on groups, breaches and archive on their assets, and each job running the checks of its assets."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

pytestmark = pytest.mark.xdist_group("dagster-definitions")  # the worker that built the definitions reads them


@pytest.fixture(scope="module")
def repo(definitions: Any) -> Any:
    return definitions.get_repository_def()


def _checks(repo: Any) -> dict[str, set[str]]:
    graph = repo.asset_graph
    return {k.to_user_string(): {c.name for c in graph.get(k).check_keys} for k in graph.get_all_asset_keys()}


def test_every_schedule_and_every_sensor_runs_by_default(repo: Any) -> None:
    schedules = {s.name: s.default_status.value for s in repo.schedule_defs}
    sensors = {s.name: s.default_status.value for s in repo.sensor_defs}
    assert schedules == dict.fromkeys(("rankings_every_5_min_schedule", "attribution_hourly_schedule",
                                       "costs_hourly_schedule", "analytics_daily_schedule",
                                       "archive_monthly_schedule", "reclaim_forecast_daily_schedule"), "RUNNING")
    assert sensors == dict.fromkeys(("new_events_sensor", "freshness_checks_sensor", "alert_on_run_failure"),
                                    "RUNNING")


def test_each_cadence_asset_has_a_freshness_check_with_the_lag_it_promises(repo: Any) -> None:
    promised = {"pool_rankings": timedelta(minutes=10), "savings_attribution": timedelta(hours=2),
                "correlation_groups": timedelta(hours=26), "recommendations": timedelta(hours=26),
                "cost_archive": timedelta(days=32)}
    found = {}
    for key in repo.asset_graph.asset_check_keys:
        if key.name == "freshness_check":
            spec = repo.asset_graph.get_check_spec(key)
            params = spec.metadata["dagster/freshness_params"].data
            found[key.asset_key.to_user_string()] = timedelta(seconds=params["lower_bound_delta_seconds"])
    assert found == promised


def test_the_freshness_sensor_evaluates_every_freshness_check(repo: Any) -> None:
    sensor = repo.get_sensor_def("freshness_checks_sensor")
    selected = sensor.asset_selection.resolve_checks(repo.asset_graph)
    assert {(k.asset_key.to_user_string(), k.name) for k in selected} == {
        (a, "freshness_check") for a in ("pool_rankings", "savings_attribution", "correlation_groups",
                                         "recommendations", "cost_archive")}


def test_groups_breaches_and_archive_have_their_checks(repo: Any) -> None:
    checks = _checks(repo)
    assert "every_pool_in_exactly_one_group" in checks["correlation_groups"]
    assert "every_breach_is_an_event" in checks["contract_breaches"]
    assert "archive_matches_its_month" in checks["cost_archive"]
    assert {"rankings_cover_every_active_pool", "ranking_scores_in_range"} <= checks["pool_rankings"]


def test_the_groups_check_blocks_what_depends_on_bad_groups(repo: Any) -> None:
    from dagster import AssetCheckKey, AssetKey

    spec = repo.asset_graph.get_check_spec(AssetCheckKey(AssetKey("correlation_groups"),
                                                         "every_pool_in_exactly_one_group"))
    assert spec.blocking


@pytest.mark.parametrize(("job", "asset"), [("rankings_every_5_min", "pool_rankings"),
                                            ("analytics_daily", "correlation_groups"),
                                            ("analytics_daily", "contract_breaches"),
                                            ("archive_monthly", "cost_archive")])
def test_each_scheduled_job_runs_the_checks_of_the_assets_it_materialises(repo: Any, job: str, asset: str) -> None:
    graph = repo.get_job(job).asset_layer.asset_graph
    in_job = {k.name for k in graph.asset_check_keys if k.asset_key.to_user_string() == asset}
    assert in_job == _checks(repo)[asset]


def test_the_event_sensor_triggers_the_rankings_and_the_failure_sensor_watches_every_job(repo: Any) -> None:
    assert [j.name for j in repo.get_sensor_def("new_events_sensor").jobs] == ["rankings_every_5_min"]
    failure = repo.get_sensor_def("alert_on_run_failure")
    assert not failure.has_jobs  # no job list: it watches every job of the code location


def test_the_event_sensor_only_triggers_and_never_runs_the_ingest_itself() -> None:
    import ast

    from testkit.paths import REPO

    imported = set()
    for path in (REPO / "orchestration/defs/ingest/sensors.py", REPO / "orchestration/ingest.py"):
        tree = ast.parse(path.read_text())
        imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m.startswith(("stores", "nats"))}, imported
