"""The demo's analytics step: drain the ingest into ClickHouse, attribute the demo's hours with the ledger
functions the hourly ``savings_attribution`` asset runs (its partitions are whole hours; the demo's hour is
still open), materialise the other Dagster assets and the dbt finance models, write the reports and read the
money rows of the summary from ``fct_savings_ledger`` (wasted work from ``savings_ledger``, which also holds the
reclaimable hours it is measured against)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

__all__ = ["dagster_home", "materialise_and_report"]


def dagster_home(cfg: Any) -> Path:
    """The demo's ``DAGSTER_HOME``: beside its stack, kept after the demo for ``dagster dev``."""
    return Path(cfg.home) / "dagster"


def _run(argv: list[str], log: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=os.environ.copy())
    with log.open("a") as f:
        f.write(f"$ {' '.join(argv)}\n{result.stdout}\n{result.stderr}\n")
    return result


def materialise_and_report(urls: Any, provider_url: str, cfg: Any, summary: Any, run_dir: Path,
                           phase: Callable[[str], None]) -> None:
    """Dagster's and dbt's own output goes to ``analytics.log`` in the run directory, not the screen."""
    import logging

    log_file = (run_dir / "analytics.log").open("ab")
    saved = os.dup(1), os.dup(2)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(log_file.fileno(), 1)
    os.dup2(log_file.fileno(), 2)
    logging.getLogger("dagster").setLevel(logging.WARNING)
    screen = os.fdopen(os.dup(saved[0]), "w")
    started = time.monotonic()
    last: dict[str, Any] = {"at": started, "text": "analytics"}
    quiet = threading.Event()

    def show(text: str) -> None:
        phase(text)  # the display keeps the phase; the line goes to the real screen
        last.update(at=time.monotonic(), text=text)
        print(f"  {text} (+{time.monotonic() - started:.0f} s)", file=screen, flush=True)

    def keepalive() -> None:  # a step (the assets, dbt) can run a minute with nothing to show: say it still works
        while not quiet.wait(1.0):
            if time.monotonic() - last["at"] >= 10:
                last["at"] = time.monotonic()
                print(f"  still: {last['text']} (+{time.monotonic() - started:.0f} s)", file=screen, flush=True)

    beat = threading.Thread(target=keepalive, name="analytics-keepalive", daemon=True)
    beat.start()
    try:
        _materialise_and_report(urls, provider_url, cfg, summary, run_dir, show)
    finally:
        quiet.set()
        beat.join()
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
        screen.close()
        log_file.close()


def _acting_passes(postgres_url: str) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        return {str(p): t for p, t in conn.execute(
            "SELECT partition, min(started_at) FROM controller_cycles WHERE NOT read_only GROUP BY partition")}


def _materialise_and_report(urls: Any, provider_url: str, cfg: Any, summary: Any, run_dir: Path,
                            phase: Callable[[str], None]) -> None:
    log = run_dir / "analytics.log"
    sco = [sys.executable, "-m", "sco"]
    # PostgreSQL: no SCO_POSTGRES_URL, so the analytics and the reports each read their own role's URL from
    # the stack file (SCO_HOME); the ingest below likewise its own NATS user
    os.environ.pop("SCO_POSTGRES_URL", None)
    os.environ.update(SCO_CLICKHOUSE_URL=urls.clickhouse,
                      SCO_PROVIDER_URL=provider_url, SCO_ARCHIVE_DIR=str(run_dir / "archive"))
    summary.acting_since = _acting_passes(urls.postgres)
    phase("analytics: draining the event ingest into ClickHouse")
    _run([*sco, "ingest", "--once"], log)

    from orchestration.definitions import build_definitions
    from orchestration.resources import ClickHouseResource

    from .instance import GE_CHECKS, materialise, open_instance, unpartitioned_keys

    defs = build_definitions()
    # the persistent instance `dagster dev` opens afterwards (docs/demo.md); a fresh stack, a fresh instance
    instance = open_instance(dagster_home(cfg), fresh=True)

    phase("analytics: pool catalogue from the provider and rankings (Dagster)")
    ch = ClickHouseResource(url=urls.clickhouse)
    resources = dict(defs.resources or {})
    resources["clickhouse"] = ch
    t = time.monotonic()
    ranked = {"pool_catalogue", "pool_rankings"}
    results = [materialise(instance, defs, resources, ranked, GE_CHECKS)]
    summary.timing("pool_rankings", time.monotonic() - t)

    phase("analytics: attributing the demo's hours (the savings_attribution asset's ledger functions)")
    _attribute_hours(ch, instance, summary)

    phase("analytics: groups, breaches, recommendations and the dbt finance models (Dagster)")
    t = time.monotonic()
    results.append(materialise(instance, defs, resources, set(unpartitioned_keys(defs)) - ranked, GE_CHECKS))
    summary.timing("analytics", time.monotonic() - t)
    # the breaches' contract-breach events go the way every event goes: outbox -> JetStream -> ClickHouse
    phase("analytics: relaying the contract-breach events to the event stream and ClickHouse")
    _run([*sco, "outbox", "relay", "--once"], log)
    _run([*sco, "ingest", "--once"], log)
    ok = all(r.success for r in results)
    summary.timings["analytics_ok"] = float(ok)
    if not ok:
        with log.open("a") as f:
            for r in results:
                for e in r.all_events:
                    if e.is_failure:
                        f.write(f"{e.event_type_value}: {e.message}\n")

    phase("analytics: reading the ledger")
    _read_ledger(ch, summary)

    phase("writing the fleet and showback reports")
    _write_reports(cfg, summary, log)


def _attribute_hours(ch: Any, instance: Any, summary: Any) -> None:
    """Every hour of the demo through the ledger functions the ``savings_attribution`` asset runs, with the
    orchestrator's own measured CPU as its usage; recorded on the Dagster instance as the asset's runs."""
    from orchestration import ledger

    from .instance import record_attribution

    hour = summary.started.replace(minute=0, second=0, microsecond=0)
    # the orchestrator's own footprint, measured: CPU-seconds at the guaranteed rate of €0.04 per vCPU-hour
    cpu_s = sum(summary.orchestrator_cpu_s.values())
    summary.money["orchestrator_eur"] = cpu_s / 3600 * 0.04
    ch.insert("orchestrator_usage", [(hour.replace(tzinfo=None), "r1", Decimal(str(round(cpu_s / 3600 * 0.04, 6))))],
              ("hour", "region", "cost_eur"))
    t = time.monotonic()
    now = datetime.now(UTC)  # the demo's last hour is still open: attribute it up to now, not to its end
    attributed, workloads = [], set()
    while hour <= now:
        inputs = ledger.read_hour(ch, "r1", hour, until=now)
        lines = ledger.attribute_hour(inputs)
        ledger.write_hour(ch, "r1", inputs, lines)
        attributed.append(hour)
        workloads |= {ln.workload for ln in lines}
        hour += timedelta(hours=1)
    record_attribution(instance, attributed, now, len(workloads))
    summary.timing("attribution", time.monotonic() - t)


def _read_ledger(ch: Any, summary: Any) -> None:
    """Net saving, wasted work and the recommendations' directions, from the marts the models wrote."""
    rows = ch.rows(
        "SELECT sum(counterfactual_eur), sum(net_saving_eur), sum(orchestrator_eur) FROM fct_savings_ledger "
        "WHERE hour >= {start:DateTime('UTC')}",
        {"start": summary.started.replace(minute=0, second=0, microsecond=0, tzinfo=None)})
    if rows and rows[0][0]:
        cf, net, orch = (float(x or 0) for x in rows[0])
        summary.money |= {"net_pct": 100 * net / cf if cf else None,
                         "orchestrator_pct": 100 * orch / net if net > 0 else None,
                         "counterfactual_eur": cf, "net_eur": net}
    # wasted work against the *reclaimable* instance hours (the one-pager's denominator), as the ledger
    # computed them (fct_savings_ledger carries the wasted hours but not the reclaimable hours)
    waste = ch.rows(
        "SELECT sum(wasted_hours), sum(reclaimable_hours), sum(reclaimable_eur), sum(fallback_eur), "
        "sum(fallback_hours) FROM savings_ledger FINAL WHERE hour >= {start:DateTime('UTC')}",
        {"start": summary.started.replace(minute=0, second=0, microsecond=0, tzinfo=None)})
    if waste and waste[0][1]:
        wasted_h, reclaimable_h, reclaimable_eur, fallback_eur, fallback_h = (float(x or 0) for x in waste[0])
        summary.money |= {"wasted_pct": 100 * wasted_h / reclaimable_h if reclaimable_h else None,
                          "wasted_hours": wasted_h, "reclaimable_hours": reclaimable_h,
                          "reclaimable_eur": reclaimable_eur, "fallback_eur": fallback_eur,
                          "fallback_hours": fallback_h}

    # every term of the ledger's identity over the run's hours: the net saving recomputed at the production rate
    # (sco/demo/production.py:net_at_rate) takes them from here
    terms = ("counterfactual_eur", "wasted_eur", "useful_hours", "wasted_hours", "floor_eur", "headroom_eur",
             "storage_eur", "orchestrator_eur")
    sums = ch.rows(f"SELECT {', '.join(f'sum({t})' for t in terms)} FROM savings_ledger FINAL "
                   "WHERE hour >= {start:DateTime('UTC')}",
                   {"start": summary.started.replace(minute=0, second=0, microsecond=0, tzinfo=None)})
    if sums and sums[0][0] is not None:
        summary.money["ledger"] = {**{t: float(v or 0) for t, v in zip(terms, sums[0], strict=True)},
                                   **{k: summary.money[k] for k in ("reclaimable_hours", "reclaimable_eur",
                                                                    "fallback_eur", "fallback_hours")
                                      if k in summary.money}}

    latest = ch.rows("SELECT direction, count() FROM (SELECT workload, argMax(direction, computed_at) AS direction "
                     "FROM recommendations FINAL GROUP BY workload) GROUP BY direction")
    summary.recommendations = {str(direction): int(n) for direction, n in latest or []}


def _write_reports(cfg: Any, summary: Any, log: Path) -> None:
    sco = [sys.executable, "-m", "sco"]
    cfg.reports.mkdir(parents=True, exist_ok=True)
    month = datetime.now(UTC).strftime("%Y-%m")
    if _run([*sco, "report", "fleet", "--out", str(cfg.reports / "fleet-r1.html")], log).returncode == 0:
        summary.reports.append(str(cfg.reports / "fleet-r1.html"))
    for workload in ("spark-etl-nightly", "genomics-align", "ci-runners"):
        target = cfg.reports / f"showback-{workload}-{month}.html"
        if _run([*sco, "report", "showback", "--workload", workload, "--month", month, "--out", str(target)],
                log).returncode == 0:
            summary.reports.append(str(target))
