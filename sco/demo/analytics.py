"""The demo's analytics step: drain the ingest into ClickHouse, attribute the demo's hours with the ledger
functions the hourly ``savings_attribution`` asset runs (its partitions are whole hours; the demo's hour is
still open), materialise the other Dagster assets and the dbt finance models, write the reports and read the
money rows of the summary from ``fct_savings_ledger``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = ["materialise_and_report"]


def _run(argv: list[str], log: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=os.environ.copy())
    with log.open("a") as f:
        f.write(f"$ {' '.join(argv)}\n{result.stdout}\n{result.stderr}\n")
    return result


def materialise_and_report(urls: Any, cfg: Any, summary: Any, run_dir: Path,
                           phase: Callable[[str], None]) -> None:
    log = run_dir / "analytics.log"
    sco = [sys.executable, "-m", "sco"]
    os.environ.update(SCO_CLICKHOUSE_URL=urls.clickhouse, SCO_POSTGRES_URL=urls.postgres,
                      SCO_ARCHIVE_DIR=str(run_dir / "archive"))
    phase("analytics: draining the event ingest into ClickHouse")
    _run([*sco, "ingest", "--once", "--nats", urls.nats, "--clickhouse", urls.clickhouse], log)

    from dagster import materialize

    from orchestration import ledger
    from orchestration.definitions import defs
    from orchestration.resources import ClickHouseResource

    phase("analytics: attributing the demo's hours (the savings_attribution asset's ledger functions)")
    ch = ClickHouseResource(url=urls.clickhouse)
    hour = summary.started.replace(minute=0, second=0, microsecond=0)
    t = time.monotonic()
    while hour <= datetime.now(UTC):
        inputs = ledger.read_hour(ch, "r1", hour)
        ledger.write_hour(ch, "r1", inputs, ledger.attribute_hour(inputs))
        hour += timedelta(hours=1)
    summary.timing("attribution", time.monotonic() - t)

    phase("analytics: materialising the Dagster assets and the dbt finance models")
    unpartitioned: list[Any] = [a for a in (defs.assets or []) if getattr(a, "partitions_def", None) is None]
    resources = dict(defs.resources or {})
    resources["clickhouse"] = ch
    t = time.monotonic()
    ranked = [a for a in unpartitioned if {k.to_user_string() for k in a.keys} & {"pool_catalogue", "pool_rankings"}]
    result = materialize(ranked, resources=resources, raise_on_error=False)
    summary.timing("pool_rankings", time.monotonic() - t)
    rest = [a for a in unpartitioned if a not in ranked]
    result2 = materialize(rest, resources=resources, raise_on_error=False)
    summary.timing("analytics", time.monotonic() - t)
    summary.timings["analytics_ok"] = float(result.success and result2.success)
    if not (result.success and result2.success):
        with log.open("a") as f:
            for r in (result, result2):
                for e in r.all_events:
                    if e.is_failure:
                        f.write(f"{e.event_type_value}: {e.message}\n")

    phase("analytics: reading the ledger")
    rows = ch.rows(
        "SELECT sum(counterfactual_eur), sum(net_saving_eur), sum(wasted_hours), sum(instance_hours), "
        "sum(orchestrator_eur) FROM fct_savings_ledger WHERE hour >= {start:DateTime('UTC')}",
        {"start": summary.started.replace(minute=0, second=0, microsecond=0, tzinfo=None)})
    if rows and rows[0][0]:
        cf, net, wasted, hours, orch = (float(x or 0) for x in rows[0])
        summary.money = {"net_pct": 100 * net / cf if cf else None,
                         "wasted_pct": 100 * wasted / hours if hours else None,
                         "orchestrator_pct": 100 * orch / net if net > 0 else None,
                         "counterfactual_eur": cf, "net_eur": net}

    cfg.reports.mkdir(parents=True, exist_ok=True)
    phase("writing the fleet and showback reports")
    month = datetime.now(UTC).strftime("%Y-%m")
    if _run([*sco, "report", "fleet", "--out", str(cfg.reports / "fleet-r1.html")], log).returncode == 0:
        summary.reports.append(str(cfg.reports / "fleet-r1.html"))
    for workload in ("spark-etl-nightly", "genomics-align", "ci-runners"):
        target = cfg.reports / f"showback-{workload}-{month}.html"
        if _run([*sco, "report", "showback", "--workload", workload, "--month", month, "--out", str(target)],
                log).returncode == 0:
            summary.reports.append(str(target))
