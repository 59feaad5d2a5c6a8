# mypy: disable-error-code="type-arg, unused-ignore"
"""The hourly cost inputs: ``storage_usage`` from RGW bucket stats (one partition = one hour)."""

from datetime import UTC
from decimal import Decimal

from dagster import AssetExecutionContext, MaterializeResult, asset

from orchestration import storage
from orchestration.defs.attribution.assets import HOURLY
from orchestration.resources import ClickHouseResource, RgwResource

__all__ = ["ASSETS", "storage_usage"]


@asset(group_name="analytics", partitions_def=HOURLY,
       description="Hourly: checkpoint storage per workload (GiB-hours, EUR per GiB-hour) from RGW bucket stats "
                   "(Admin Ops API), the bucket's owner being the workload (ADR-19, ADR-26); read at the hour's end.")
def storage_usage(context: AssetExecutionContext, clickhouse: ClickHouseResource,
                  rgw: RgwResource) -> MaterializeResult:
    if not rgw.endpoint:
        return MaterializeResult(metadata={"rows": 0, "note": "no RGW endpoint configured (SCO_RGW_ENDPOINT)"})
    hour = context.partition_time_window.start.astimezone(UTC)
    buckets = rgw.stats().buckets()
    rows = storage.storage_rows(buckets, hour, Decimal(rgw.eur_per_gib_month), rgw.owner_map())
    clickhouse.insert("storage_usage", rows, ("hour", "workload", "gib_hours", "eur_per_gib_h"))
    return MaterializeResult(metadata={"rows": len(rows), "buckets": len(buckets),
                                       "gib": round(float(sum(r[2] for r in rows)), 3)})


ASSETS = [storage_usage]
