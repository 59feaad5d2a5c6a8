# mypy: disable-error-code="type-arg, unused-ignore"
"""The monthly cost archive asset (``orchestration.archive`` writes the files and the manifest to the target
the settings name: an S3 bucket with Object Lock, else the local directory)."""

from datetime import UTC

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
    """Archive the partition's month of cost attribution as Parquet with a manifest."""
    month = context.partition_time_window.start.astimezone(UTC)
    target = settings.archive_target()
    result = archive.archive_month(clickhouse, month, target, settings.region, settings.archive_correction)
    context.log.info(result.message)
    prefix = archive.month_prefix(settings.region, month, settings.archive_correction)
    return MaterializeResult(metadata={"directory": result.location, "prefix": prefix, "action": result.action,
                                       "files": MetadataValue.json(dict(result.manifest["files"]))})  # type: ignore[call-overload]
