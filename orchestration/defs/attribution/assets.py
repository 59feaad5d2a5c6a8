# mypy: disable-error-code="type-arg, unused-ignore"
"""The hourly savings attribution asset; a range of partitions runs as one run (``orchestration.backfill``)."""

import warnings
from datetime import UTC, timedelta

from dagster import AssetExecutionContext, BackfillPolicy, HourlyPartitionsDefinition, MaterializeResult, asset

from orchestration import backfill
from orchestration.defs.catalogue.assets import pool_catalogue
from orchestration.resources import AnalyticsSettings, ClickHouseResource

__all__ = ["HOURLY", "savings_attribution"]

HOURLY = HourlyPartitionsDefinition(start_date="2026-01-01-00:00", timezone="UTC")

with warnings.catch_warnings():  # backfill_policy is a beta parameter in dagster 1.13
    warnings.simplefilter("ignore")
    _hourly_single_run = asset(
        group_name="analytics", partitions_def=HOURLY, backfill_policy=BackfillPolicy.single_run(),
        deps=[pool_catalogue],
        description="Hourly per workload: useful work at the guaranteed rate minus every cost; labelled "
                    "'rate-card saving' (ADR-26). A backfill of many hours runs as one run.")


@_hourly_single_run
def savings_attribution(context: AssetExecutionContext, clickhouse: ClickHouseResource,
                        settings: AnalyticsSettings) -> MaterializeResult:
    """Attribute every hour of the partition and write the ledger and cost rows."""
    window = context.partition_time_window
    start, end = window.start.astimezone(UTC), window.end.astimezone(UTC)
    lines = backfill.attribute_range(clickhouse, settings.region, start, end)
    return MaterializeResult(metadata={
        "hours": int((end - start) / timedelta(hours=1)), "workloads": len({ln.workload for ln in lines}),
        "net_saving_eur": round(float(sum(ln.net_saving_eur for ln in lines)), 2), "label": "rate-card saving"})
