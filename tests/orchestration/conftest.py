"""One embedded stack per session for the analytics tests: the ClickHouse HTTP front end over chDB and
PostgreSQL, with 90 days of simulated pool history (``controllers.simregion.history``, what
``sco sim history`` writes) plus the worked example's day, materialised once through every asset."""

from __future__ import annotations

import json
import os
import subprocess
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():  # third-party modules that warn about their own dependencies at import
    warnings.simplefilter("ignore", DeprecationWarning)
    import great_expectations  # noqa: F401  (imports the deprecated sre_constants)
    import sqlglotrs  # noqa: F401  (dagster-dbt's SQL parser accelerator)

from . import worked_example as ex

HISTORY_DAYS = 90
# The history ends today (as `sco sim history` does by default): rankings are kept 90 days by TTL, so a
# history that ended months ago would have its rankings dropped on insert. But it ends no later than 25 days
# after the worked example's day, so that day stays inside the recommendations' 30-day window on any day of
# the month (the example's day is in the previous month, for the archive; late in a month, "today" would put
# it 30+ days back).
_TODAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
HISTORY_START = min(_TODAY, ex.DAY + timedelta(days=25)) - timedelta(days=HISTORY_DAYS)
HISTORY_POOLS = int(os.environ.get("SCO_TEST_HISTORY_POOLS", "140"))


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
        from orchestration.finance_models import dbt_resource
        from orchestration.resources import AnalyticsSettings, ProviderFeedResource

        return {"clickhouse": self.ch(), "postgres": self.pg(), "provider": ProviderFeedResource(),
                "settings": AnalyticsSettings(region="r1", archive_dir=str(self.root / "archive")),
                "dbt": dbt_resource()}


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    from stores.clickhouse import client
    from stores.migrate import migrate_clickhouse, migrate_postgres
    from stores.postgres import connect
    from tests.stores.fixtures import ClickHouseProcess, PostgresProcess

    root = tmp_path_factory.mktemp("analytics")
    ch = ClickHouseProcess().start()
    try:
        pg = PostgresProcess().start()
    except Exception:
        ch.close()
        raise
    old = {k: os.environ.get(k) for k in ("SCO_CLICKHOUSE_URL", "SCO_POSTGRES_URL")}
    os.environ["SCO_CLICKHOUSE_URL"], os.environ["SCO_POSTGRES_URL"] = ch.url, pg.url
    try:
        c = client(ch.url)
        migrate_clickhouse(c)
        c.close()
        with connect(pg.url, autocommit=True) as conn:
            migrate_postgres(conn)
        yield Stack(ch.url, pg.url, root)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        ch.close()
        pg.close()


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


def run_dbt_unit_tests(stack: Stack) -> subprocess.CompletedProcess[str]:
    from orchestration.finance_models import DBT_DIR, dbt_env, dbt_executable

    return subprocess.run([dbt_executable(), "test", "--select", "test_type:unit", "--profiles-dir", str(DBT_DIR),
                           "--project-dir", str(DBT_DIR)], cwd=DBT_DIR, capture_output=True, text=True,
                          env={**os.environ, **dbt_env(stack.clickhouse_url)}, timeout=300)


@pytest.fixture(scope="session")
def materialised(stack: Stack) -> Stack:
    """History + worked example loaded, every asset materialised once (the order the schedules keep)."""
    from dagster import materialize

    from orchestration import assets as a
    from orchestration.checks import ALL_CHECKS
    from orchestration.finance_models import finance_models


    stack.history = load_history(stack)
    load_worked_example(stack)
    finance = finance_models
    res = stack.resources()
    results: dict[str, Any] = {}
    results["core"] = materialize([a.pool_catalogue, a.pool_rankings, a.correlation_groups, a.advisory_precision,
                                   *ALL_CHECKS], resources=res, raise_on_error=False,
                                  selection=[a.pool_catalogue, a.pool_rankings, a.correlation_groups,
                                             a.advisory_precision])
    day = ex.DAY.strftime("%Y-%m-%d")
    results["attribution"] = materialize(
        [a.savings_attribution, a.pool_catalogue, *ALL_CHECKS], resources=res, raise_on_error=False,
        selection=[a.savings_attribution],
        tags={"dagster/asset_partition_range_start": f"{day}-00:00",
              "dagster/asset_partition_range_end": f"{day}-23:00"})
    results["daily"] = materialize([a.contract_breaches, a.recommendations, a.savings_attribution, finance],
                                   resources=res, raise_on_error=False,
                                   selection=[a.contract_breaches, a.recommendations, finance])
    results["archive"] = materialize([a.cost_archive, a.savings_attribution], resources=res, raise_on_error=False,
                                     selection=[a.cost_archive], partition_key=ex.DAY.strftime("%Y-%m-01"))
    results["dbt_unit"] = run_dbt_unit_tests(stack)
    stack.results = results
    return stack
