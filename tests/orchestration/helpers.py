"""What the analytics tests share (imported, never a conftest): the embedded stack's handle, the pool history
they run on, the worked example's inputs loaded into the stores, and every asset materialised once."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from . import worked_example as ex

__all__ = ["HISTORY_DAYS", "HISTORY_POOLS", "HISTORY_START", "Stack", "attribute_hour_assets", "load_history",
           "load_worked_example", "materialise_everything", "start_dbt_unit_tests"]

HISTORY_DAYS = 90
# The history ends today (as `sco sim history` does by default): rankings are kept 90 days by TTL, so a
# history that ended months ago would have its rankings dropped on insert. But it ends no later than 25 days
# after the worked example's day, so that day stays inside the recommendations' 30-day window on any day of
# the month (the example's day is in the previous month, for the archive; late in a month, "today" would put
# it 30+ days back).
_TODAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
HISTORY_START = min(_TODAY, ex.DAY + timedelta(days=25)) - timedelta(days=HISTORY_DAYS)
# 70 of the region's 140 reclaimable pools: the history's cost is the simulation, in proportion to the
# instances, and half the pools keep what the assertions need (six aggregates with two busy pools each that phi
# over 90 days joins, and no learned group mixing aggregates: measured with seed 1, 90 days, 70 pools; fewer
# days are not enough, at 30 days phi merges the whole region). SCO_TEST_HISTORY_POOLS=140 runs the full region.
HISTORY_POOLS = int(os.environ.get("SCO_TEST_HISTORY_POOLS", "70"))


@dataclass
class Stack:
    clickhouse_url: str
    postgres_url: str
    root: Path
    history: Any = None
    results: dict[str, Any] | None = None

    def ch(self) -> Any:
        from orchestration.resources import ClickHouseResource

        return ClickHouseResource(url=self.clickhouse_url)

    def pg(self) -> Any:
        from orchestration.resources import PostgresResource

        return PostgresResource(url=self.postgres_url)

    def resources(self) -> dict[str, Any]:
        from orchestration.defs.finance.assets import dbt_resource
        from orchestration.resources import AnalyticsSettings, ProviderFeedResource

        return {"clickhouse": self.ch(), "postgres": self.pg(), "provider": ProviderFeedResource(),
                "settings": AnalyticsSettings(region="r1", archive_dir=str(self.root / "archive"),
                                              dbt_docs_dir=str(self.root / "dbt-docs"),
                                              forecast_model_dir=str(self.root / "forecast")),
                "dbt": dbt_resource()}


def load_history(stack: Stack) -> Any:
    from controllers.simregion.config import RegionConfig
    from controllers.simregion.history import write_history
    from stores.clickhouse import client

    c = client(stack.clickhouse_url)
    try:
        return write_history(c, RegionConfig(pools=HISTORY_POOLS), days=HISTORY_DAYS, start=HISTORY_START)
    finally:
        c.close()


def load_worked_example(stack: Stack) -> None:
    from orchestration.catalogue import write_catalogue

    ch = stack.ch()
    write_catalogue(ch, ex.pools(), ex.DAY)
    rows = ex.events()
    ch.insert("events", [list(r.values()) for r in rows], list(rows[0]))
    ch.insert("storage_usage", ex.storage_rows(), ("hour", "workload", "gib_hours", "eur_per_gib_h"))
    ch.insert("orchestrator_usage", ex.orchestrator_rows(), ("hour", "region", "cost_eur"))
    with stack.pg().connection() as conn:
        conn.execute("INSERT INTO contracts_in_force (workload, contract_version, tier, region, partition, spec) "
                     "VALUES (%s, %s, %s, %s, %s, %s)",
                     ("etl", "etl@3", "T3", "r1", "k8s-a",
                      json.dumps({"owner": "data-eng", "max_interruption_rate_pct_h": "2.0"})))
        conn.commit()


def start_dbt_unit_tests(stack: Stack) -> subprocess.Popen[str]:
    """The dbt unit tests in the background (they need the models built; ``finish`` collects them), in a target
    path of their own: dbt rewrites the manifest of the target path it runs in, and other processes load the
    shared one (``prepare_manifest``)."""
    from orchestration.finance_models import DBT_DIR, dbt_env, dbt_executable

    target = tempfile.mkdtemp(prefix="sco-dbt-unit-")
    return subprocess.Popen([dbt_executable(), "test", "--select", "test_type:unit", "--profiles-dir", str(DBT_DIR),
                             "--project-dir", str(DBT_DIR), "--target-path", target], cwd=DBT_DIR,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **dbt_env(stack.clickhouse_url)})


def finish(proc: subprocess.Popen[str], timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def materialise_everything(stack: Stack) -> dict[str, Any]:
    """Every asset materialised once, in the order the schedules keep; the dbt unit tests beside the archive."""
    from dagster import materialize

    from orchestration.defs.archive.assets import cost_archive
    from orchestration.defs.attribution.assets import savings_attribution
    from orchestration.defs.attribution.checks import CHECKS as LEDGER_CHECKS
    from orchestration.defs.catalogue.assets import pool_catalogue
    from orchestration.defs.finance.assets import finance_docs, finance_models
    from orchestration.defs.finance.checks import CHECKS as MART_CHECKS
    from orchestration.defs.groups.assets import correlation_groups
    from orchestration.defs.insights.assets import advisory_precision, contract_breaches, recommendations
    from orchestration.defs.rankings.assets import pool_rankings
    from orchestration.defs.rankings.checks import CHECKS as RANKING_CHECKS

    checks = [*RANKING_CHECKS, *LEDGER_CHECKS]
    finance = finance_models()
    res = stack.resources()
    results: dict[str, Any] = {}
    core = [pool_catalogue, pool_rankings, correlation_groups, advisory_precision]
    results["core"] = materialize([*core, *checks], resources=res, raise_on_error=False, selection=core)
    day = ex.DAY.strftime("%Y-%m-%d")
    results["attribution"] = materialize(
        [savings_attribution, pool_catalogue, *checks], resources=res, raise_on_error=False,
        selection=[savings_attribution],
        tags={"dagster/asset_partition_range_start": f"{day}-00:00",
              "dagster/asset_partition_range_end": f"{day}-23:00"})
    results["daily"] = materialize([contract_breaches, recommendations, savings_attribution, finance, finance_docs,
                                    *MART_CHECKS], resources=res, raise_on_error=False,
                                   selection=[contract_breaches, recommendations, finance, finance_docs])
    unit = start_dbt_unit_tests(stack)  # alongside the archive, which reads what the models do not write
    try:
        results["archive"] = materialize([cost_archive, savings_attribution], resources=res, raise_on_error=False,
                                         selection=[cost_archive], partition_key=ex.DAY.strftime("%Y-%m-01"))
    finally:
        results["dbt_unit"] = finish(unit)
    return results


def attribute_hour_assets() -> list[Any]:
    """The hourly attribution asset with its source and every check (to re-run one hour in a test)."""
    from orchestration.defs.attribution.assets import savings_attribution
    from orchestration.defs.attribution.checks import CHECKS as LEDGER_CHECKS
    from orchestration.defs.catalogue.assets import pool_catalogue
    from orchestration.defs.rankings.checks import CHECKS as RANKING_CHECKS

    return [savings_attribution, pool_catalogue, *RANKING_CHECKS, *LEDGER_CHECKS]
