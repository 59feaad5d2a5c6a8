"""Checks on the finance archive: the archived month's row counts match the month in ClickHouse."""

from pathlib import Path

from dagster import AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity, asset_check

from orchestration.health import archive_counts, archive_matches_month, latest_archive
from orchestration.resources import AnalyticsSettings, ClickHouseResource

from .assets import cost_archive

__all__ = ["CHECKS", "archive_matches_its_month"]


def _archived_dir(context: AssetCheckExecutionContext, settings: AnalyticsSettings) -> Path | None:
    """The directory the latest materialisation wrote (its ``directory`` metadata), else the newest month."""
    event = context.instance.get_latest_materialization_event(cost_archive.key)
    materialization = event.asset_materialization if event else None
    if materialization is not None and "directory" in materialization.metadata:
        path = Path(str(materialization.metadata["directory"].value))
        if (path / "manifest.json").is_file():
            return path
    return latest_archive(Path(settings.archive_dir), settings.region)


@asset_check(asset=cost_archive, description="The archived month's row counts (manifest and Parquet files) equal "
                                             "the rows ClickHouse holds for that month.")
def archive_matches_its_month(context: AssetCheckExecutionContext, clickhouse: ClickHouseResource,
                              settings: AnalyticsSettings) -> AssetCheckResult:
    month_dir = _archived_dir(context, settings)
    if month_dir is None:
        return AssetCheckResult(passed=False, severity=AssetCheckSeverity.ERROR,
                                description=f"no archived month under {settings.archive_dir}/{settings.region}")
    ok, message = archive_matches_month(*archive_counts(clickhouse, month_dir))
    return AssetCheckResult(passed=ok, severity=AssetCheckSeverity.ERROR, description=message,
                            metadata={"directory": str(month_dir)})


CHECKS = [archive_matches_its_month]
