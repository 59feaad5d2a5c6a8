"""Checks on the finance archive: the archived month's row counts match the month in ClickHouse."""

from typing import Any

from dagster import AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity, asset_check

from orchestration.health import archive_counts, archive_matches_month, latest_archive
from orchestration.resources import AnalyticsSettings, ClickHouseResource

from .assets import cost_archive

__all__ = ["CHECKS", "archive_matches_its_month"]


def _archived_prefix(context: AssetCheckExecutionContext, target: Any, region: str) -> str | None:
    """The month the latest materialisation wrote (its ``prefix`` metadata), else the newest month archived."""
    event = context.instance.get_latest_materialization_event(cost_archive.key)
    materialization = event.asset_materialization if event else None
    if materialization is not None and "prefix" in materialization.metadata:
        prefix = str(materialization.metadata["prefix"].value)
        if target.read(prefix + "manifest.json") is not None:
            return prefix
    return latest_archive(target, region)


@asset_check(asset=cost_archive, description="The archived month's row counts (manifest and Parquet files) equal "
                                             "the rows ClickHouse holds for that month.")
def archive_matches_its_month(context: AssetCheckExecutionContext, clickhouse: ClickHouseResource,
                              settings: AnalyticsSettings) -> AssetCheckResult:
    """The archived month's row counts and sums match ClickHouse's."""
    target = settings.archive_target()
    prefix = _archived_prefix(context, target, settings.region)
    if prefix is None:
        return AssetCheckResult(passed=False, severity=AssetCheckSeverity.ERROR,
                                description=f"no archived month under {target.where(settings.region + '/')}")
    ok, message = archive_matches_month(*archive_counts(clickhouse, target, prefix))
    return AssetCheckResult(passed=ok, severity=AssetCheckSeverity.ERROR, description=message,
                            metadata={"directory": target.where(prefix)})


CHECKS = [archive_matches_its_month]
