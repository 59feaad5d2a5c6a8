# mypy: disable-error-code="type-arg, unused-ignore"
"""The hourly cost inputs (one partition = one hour): ``storage_usage`` from RGW bucket stats and
``orchestrator_usage`` from the samples the orchestrator's own processes write."""

from datetime import UTC
from decimal import Decimal

from dagster import AssetExecutionContext, MaterializeResult, asset

from orchestration import footprint, storage
from orchestration.defs.attribution.assets import HOURLY
from orchestration.resources import AnalyticsSettings, ClickHouseResource, PostgresResource, RgwResource

__all__ = ["ASSETS", "orchestrator_usage", "storage_usage"]


@asset(group_name="analytics", partitions_def=HOURLY,
       description="Hourly: checkpoint storage per workload (GiB-hours, EUR per GiB-hour) from RGW bucket stats "
                   "(Admin Ops API), the bucket's owner being the workload (ADR-19, ADR-26); read at the hour's end.")
def storage_usage(context: AssetExecutionContext, clickhouse: ClickHouseResource,
                  rgw: RgwResource) -> MaterializeResult:
    """The hour's checkpoint storage per workload from RGW's bucket stats."""
    if not rgw.endpoint:
        return MaterializeResult(metadata={"rows": 0, "note": "no RGW endpoint configured (SCO_RGW_ENDPOINT)"})
    hour = context.partition_time_window.start.astimezone(UTC)
    buckets = rgw.stats().buckets()
    rows = storage.storage_rows(buckets, hour, Decimal(rgw.eur_per_gib_month), rgw.owner_map())
    clickhouse.insert("storage_usage", rows, ("hour", "workload", "gib_hours", "eur_per_gib_h"))
    return MaterializeResult(metadata={"rows": len(rows), "buckets": len(buckets),
                                       "gib": round(float(sum(r[2] for r in rows)), 3)})


@asset(group_name="analytics", partitions_def=HOURLY,
       description="Hourly: the orchestrator's own cost (ADR-26) from the CPU seconds and resident memory its "
                   "processes sampled into PostgreSQL (controller, exclusion watcher, ingest, outbox relay), at the "
                   "guaranteed rate card per vCPU-hour and GiB-hour.")
def orchestrator_usage(context: AssetExecutionContext, clickhouse: ClickHouseResource, postgres: PostgresResource,
                       settings: AnalyticsSettings) -> MaterializeResult:
    """The hour's cost of the orchestrator itself from its processes' samples."""
    postgres.migrate()
    hour = context.partition_time_window.start.astimezone(UTC)
    rows = footprint.read_samples(postgres, settings.region, hour)
    found = footprint.hour_footprint(rows, hour, Decimal(settings.orchestrator_eur_per_vcpu_h),
                                     Decimal(settings.orchestrator_eur_per_gib_h))
    clickhouse.insert("orchestrator_usage", [(hour.replace(tzinfo=None), settings.region, found.cost_eur)],
                      ("hour", "region", "cost_eur"))
    return MaterializeResult(metadata={"cost_eur": float(found.cost_eur), "samples": len(rows),
                                       **{f"cpu_h.{k}": round(v, 6) for k, v in sorted(found.cpu_h.items())}})


ASSETS = [storage_usage, orchestrator_usage]
