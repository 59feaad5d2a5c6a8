"""Asset checks (great-expectations) on what the controllers and finance read."""

from __future__ import annotations

import pandas as pd
from dagster import AssetCheckResult, AssetCheckSeverity, asset_check

from .assets import pool_rankings, savings_attribution
from .catalogue import load_catalogue
from .expectations import ledger_balances, no_negative_hours, rankings_cover_pools, scores_in_range
from .ledger import LEDGER_COLUMNS
from .resources import AnalyticsSettings, ClickHouseResource

__all__ = ["ALL_CHECKS", "latest_ranking", "ledger_frame"]

HOUR_COLUMNS = ["instance_hours", "useful_hours", "wasted_hours", "defect_wasted_hours", "reclaimable_hours",
                "fallback_hours"]


def latest_ranking(ch: ClickHouseResource, region: str) -> list[tuple[str, float]]:
    return [(str(p), float(s)) for p, s in ch.rows(
        "SELECT pool, score FROM rankings FINAL WHERE region = {r:String} AND generation = "
        "(SELECT max(generation) FROM rankings WHERE region = {r:String})", {"r": region})]


def ledger_frame(ch: ClickHouseResource) -> pd.DataFrame:
    rows = ch.rows(f"SELECT {', '.join(LEDGER_COLUMNS)} FROM savings_ledger FINAL")
    return pd.DataFrame(rows, columns=list(LEDGER_COLUMNS))


@asset_check(asset=pool_rankings, blocking=True, description="The ranking in force covers every active pool.")
def rankings_cover_every_active_pool(clickhouse: ClickHouseResource, settings: AnalyticsSettings) -> AssetCheckResult:
    ranked = [p for p, _ in latest_ranking(clickhouse, settings.region)]
    active = [p.pool for p in load_catalogue(clickhouse, settings.region, "reclaimable")]
    ok, message = rankings_cover_pools(ranked, active)
    return AssetCheckResult(passed=ok, description=message, severity=AssetCheckSeverity.ERROR,
                            metadata={"ranked": len(ranked), "active": len(active)})


@asset_check(asset=pool_rankings, description="Every score lies in [0, 1].")
def ranking_scores_in_range(clickhouse: ClickHouseResource, settings: AnalyticsSettings) -> AssetCheckResult:
    ok, message = scores_in_range([s for _, s in latest_ranking(clickhouse, settings.region)])
    return AssetCheckResult(passed=ok, description=message)


@asset_check(asset=savings_attribution, description="No negative hours in the ledger finance reads.")
def ledger_has_no_negative_hours(clickhouse: ClickHouseResource) -> AssetCheckResult:
    frame = ledger_frame(clickhouse)
    for c in HOUR_COLUMNS:
        frame[c] = frame[c].astype(float)
    ok, message = no_negative_hours(frame, HOUR_COLUMNS, "savings_ledger")
    return AssetCheckResult(passed=ok, description=message, metadata={"rows": len(frame)})


@asset_check(asset=savings_attribution, description="counterfactual − costs = net on every ledger row.")
def ledger_balances_check(clickhouse: ClickHouseResource) -> AssetCheckResult:
    ok, message = ledger_balances(ledger_frame(clickhouse))
    return AssetCheckResult(passed=ok, description=message)


ALL_CHECKS = [rankings_cover_every_active_pool, ranking_scores_in_range, ledger_has_no_negative_hours,
              ledger_balances_check]
