"""Checks on the ranking the controllers read (great-expectations rules in ``orchestration.expectations``)."""

from dagster import AssetCheckResult, AssetCheckSeverity, asset_check

from orchestration.catalogue import load_catalogue
from orchestration.expectations import rankings_cover_pools, scores_in_range
from orchestration.readback import latest_ranking
from orchestration.resources import AnalyticsSettings, ClickHouseResource

from .assets import pool_rankings

__all__ = ["CHECKS", "ranking_scores_in_range", "rankings_cover_every_active_pool"]


@asset_check(asset=pool_rankings, blocking=True, description="The ranking in force covers every active pool.")
def rankings_cover_every_active_pool(clickhouse: ClickHouseResource, settings: AnalyticsSettings) -> AssetCheckResult:
    """The latest ranking names every active reclaimable pool."""
    ranked = [p for p, _ in latest_ranking(clickhouse, settings.region)]
    active = [p.pool for p in load_catalogue(clickhouse, settings.region, "reclaimable")]
    ok, message = rankings_cover_pools(ranked, active)
    return AssetCheckResult(passed=ok, description=message, severity=AssetCheckSeverity.ERROR,
                            metadata={"ranked": len(ranked), "active": len(active)})


@asset_check(asset=pool_rankings, description="Every score lies in [0, 1].")
def ranking_scores_in_range(clickhouse: ClickHouseResource, settings: AnalyticsSettings) -> AssetCheckResult:
    """Every score of the latest ranking lies in [0, 1]."""
    ok, message = scores_in_range([s for _, s in latest_ranking(clickhouse, settings.region)])
    return AssetCheckResult(passed=ok, description=message)


CHECKS = [rankings_cover_every_active_pool, ranking_scores_in_range]
