# mypy: disable-error-code="type-arg, unused-ignore"
"""The monthly cost archive asset (``orchestration.archive`` writes the files and the manifest)."""

from datetime import UTC
from pathlib import Path

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, MonthlyPartitionsDefinition, asset

from orchestration import archive
from orchestration.defs.attribution.assets import savings_attribution
from orchestration.resources import AnalyticsSettings, ClickHouseResource

__all__ = ["MONTHLY", "cost_archive"]

MONTHLY = MonthlyPartitionsDefinition(start_date="2026-01-01", timezone="UTC")


@asset(group_name="analytics", partitions_def=MONTHLY, deps=[savings_attribution],
       description="Monthly Parquet export of cost attribution for finance (Object Lock in production, a local "
                   "read-only directory in the demo).")
def cost_archive(context: AssetExecutionContext, clickhouse: ClickHouseResource,
                 settings: AnalyticsSettings) -> MaterializeResult:
    month = context.partition_time_window.start.astimezone(UTC)
    manifest = archive.archive_month(clickhouse, month, Path(settings.archive_dir), settings.region)
    return MaterializeResult(metadata={"directory": str(Path(settings.archive_dir) / settings.region /
                                                        month.strftime("%Y-%m")),
                                       "files": MetadataValue.json(dict(manifest["files"]))})  # type: ignore[call-overload]
