"""Asset health after the demo: the demo's analytics step materialises into a persistent Dagster instance
(``DAGSTER_HOME`` under the demo's directory), so what ``dagster dev`` opens afterwards holds the runs, the
materialisations, the check results and the freshness. Here, the analytics step reduced to its Dagster part (no
dbt, no Slurm bed): the worked example's day in fresh stores, then the instance opened again from its directory."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.services, pytest.mark.slow]

ASSETS = ("pool_catalogue", "pool_rankings", "correlation_groups", "advisory_precision", "contract_breaches",
          "recommendations")


def _attribute_day(stack: Any, instance: Any) -> list[Any]:
    """What the demo does for its hours: the ledger functions, recorded as runless materialisations."""
    from orchestration import ledger
    from sco.demo.instance import record_attribution
    from tests.orchestration import worked_example as ex

    ch, hours = stack.ch(), [ex.DAY + timedelta(hours=h) for h in range(24)]
    for hour in hours:
        inputs = ledger.read_hour(ch, "r1", hour)
        ledger.write_hour(ch, "r1", inputs, ledger.attribute_hour(inputs))
    record_attribution(instance, hours, ex.DAY + timedelta(days=1), 1)
    return hours


def test_the_demo_instance_keeps_runs_materialisations_and_check_results_for_dagster_dev(
        clickhouse_migrated_url: str, pg_migrated_url: str, tmp_path: Path) -> None:
    from dagster import AssetKey, DagsterRunStatus

    from orchestration.definitions import build_definitions
    from sco.demo.analytics import dagster_home
    from sco.demo.context import DemoConfig
    from sco.demo.instance import materialise, open_instance
    from tests.orchestration.helpers import Stack, load_worked_example

    stack = Stack(clickhouse_migrated_url, pg_migrated_url, tmp_path)
    load_worked_example(stack)
    home = dagster_home(DemoConfig(home=tmp_path / "demo"))
    assert home == tmp_path / "demo" / "dagster"
    defs = build_definitions()
    instance = open_instance(home, fresh=True)
    results = [materialise(instance, defs, stack.resources(), {"pool_catalogue", "pool_rankings"})]
    hours = _attribute_day(stack, instance)
    results.append(materialise(instance, defs, stack.resources(), set(ASSETS) - {"pool_catalogue", "pool_rankings"}))
    assert all(r.success for r in results), [e.message for r in results for e in r.all_events if e.is_failure]
    instance.dispose()

    reopened = open_instance(home)  # what `DAGSTER_HOME=<demo>/dagster dagster dev` reads
    try:
        assert (home / "dagster.yaml").is_file()
        runs = reopened.get_runs()
        assert len(runs) == 2 and {r.status for r in runs} == {DagsterRunStatus.SUCCESS}
        for name in ASSETS:
            assert reopened.get_latest_materialization_event(AssetKey(name)) is not None, name
        attributed = reopened.get_materialized_partitions(AssetKey("savings_attribution"))
        assert attributed == {h.strftime("%Y-%m-%d-%H:00") for h in hours}

        graph = defs.get_repository_def().asset_graph
        expected = {k for k in graph.asset_check_keys if k.asset_key.to_user_string() in ASSETS}
        found = reopened.event_log_storage.get_latest_asset_check_execution_by_key(list(expected))
        assert set(found) == expected, sorted(str(k) for k in expected - set(found))
        names = {(k.asset_key.to_user_string(), k.name) for k in found}
        assert {("pool_rankings", "freshness_check"), ("correlation_groups", "every_pool_in_exactly_one_group"),
                ("contract_breaches", "every_breach_is_an_event"), ("recommendations", "freshness_check")} <= names
    finally:
        reopened.dispose()
