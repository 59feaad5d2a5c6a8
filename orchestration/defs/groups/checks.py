"""Checks on the correlation groups the controller reads: every reclaimable pool in exactly one group."""

from dagster import AssetCheckResult, AssetCheckSeverity, asset_check

from orchestration.catalogue import load_catalogue
from orchestration.health import groups_cover_pools, groups_in_force_rows, latest_group_history
from orchestration.resources import AnalyticsSettings, ClickHouseResource, PostgresResource

from .assets import correlation_groups

__all__ = ["CHECKS", "every_pool_in_exactly_one_group"]


@asset_check(asset=correlation_groups, blocking=True,
             description="Every reclaimable pool of the catalogue is in exactly one group, in the computation kept "
                         "in ClickHouse and in the groups in force in PostgreSQL (what the ≤ 30 % rule reads).")
def every_pool_in_exactly_one_group(clickhouse: ClickHouseResource, postgres: PostgresResource,
                                    settings: AnalyticsSettings) -> AssetCheckResult:
    """Every reclaimable pool is in exactly one group, computed and in force."""
    pools = [p.pool for p in load_catalogue(clickhouse, settings.region, "reclaimable")]
    kept_ok, kept = groups_cover_pools(pools, latest_group_history(clickhouse, settings.region))
    force_ok, in_force = groups_cover_pools(pools, groups_in_force_rows(postgres, settings.region))
    return AssetCheckResult(passed=kept_ok and force_ok, severity=AssetCheckSeverity.ERROR,
                            description=f"computed: {kept}; in force: {in_force}", metadata={"pools": len(pools)})


CHECKS = [every_pool_in_exactly_one_group]
