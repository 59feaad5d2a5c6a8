"""The one Dagster code location: ``dagster asset materialize -m orchestration.definitions --select '*'``.

Schedules: rankings every 5 minutes, attribution hourly, groups/precision/breaches/recommendations and the
finance models daily, the archive monthly. The sensor runs one pass of the ingest (issue 3's
``stores.ingest.drain``: JetStream → ClickHouse) and asks for a fresh ranking when the history moved.
"""

from __future__ import annotations

import os

from dagster import (
    AssetSelection,
    DefaultScheduleStatus,
    Definitions,
    RunRequest,
    ScheduleDefinition,
    SensorEvaluationContext,
    SkipReason,
    build_schedule_from_partitioned_job,
    define_asset_job,
    sensor,
)

from .assets import (
    ALL_ASSETS,
    advisory_precision,
    contract_breaches,
    correlation_groups,
    cost_archive,
    pool_catalogue,
    pool_rankings,
    recommendations,
    savings_attribution,
)
from .checks import ALL_CHECKS
from .finance_models import dbt_resource, finance_models
from .resources import AnalyticsSettings, ClickHouseResource, PostgresResource, ProviderFeedResource

__all__ = ["defs", "ingest_pending", "new_events_sensor"]

rankings_job = define_asset_job("rankings_every_5_min", AssetSelection.assets(pool_catalogue, pool_rankings))
attribution_job = define_asset_job("attribution_hourly", AssetSelection.assets(savings_attribution))
daily_job = define_asset_job("analytics_daily", AssetSelection.assets(
    correlation_groups, advisory_precision, contract_breaches, recommendations) | AssetSelection.assets(
    finance_models))
archive_job = define_asset_job("archive_monthly", AssetSelection.assets(cost_archive))

schedules = [
    ScheduleDefinition(job=rankings_job, cron_schedule="*/5 * * * *", execution_timezone="UTC",
                       default_status=DefaultScheduleStatus.RUNNING),
    build_schedule_from_partitioned_job(attribution_job, minute_of_hour=5),
    ScheduleDefinition(job=daily_job, cron_schedule="20 0 * * *", execution_timezone="UTC"),
    build_schedule_from_partitioned_job(archive_job, day_of_month=1, hour_of_day=2),
]


def ingest_pending(nats_url: str | None = None, clickhouse_url: str | None = None) -> int | None:
    """One pass of issue 3's ingest (``stores.ingest.drain``); ``None`` when no NATS is configured."""
    from stores.config import StoreNotConfigured, resolve_url
    from stores.ingest import drain

    try:
        url = resolve_url("nats", nats_url or None)
    except StoreNotConfigured:
        return None
    return drain(url, clickhouse_url or None)


@sensor(job=rankings_job, minimum_interval_seconds=30)
def new_events_sensor(context: SensorEvaluationContext, clickhouse: ClickHouseResource) -> RunRequest | SkipReason:
    """Ingest what waits on the JetStream stream (when NATS is configured), then request a ranking when the
    number of events or the latest event time changed since the last evaluation."""
    try:
        inserted = ingest_pending(os.environ.get("SCO_NATS_URL"), clickhouse.url)
        if inserted is not None:
            context.log.info(f"ingested {inserted} event(s)")
    except Exception as exc:  # the ingest retries on its own next time; ranking what is there still helps
        context.log.warning(f"ingest pass failed ({type(exc).__name__}: {exc}); ranking what is in ClickHouse")
    rows = clickhouse.rows("SELECT count(), max(time) FROM events")
    count, latest = rows[0] if rows else (0, None)
    cursor = f"{count}@{latest}"
    if not count or cursor == context.cursor:
        return SkipReason("no new events")
    context.update_cursor(cursor)
    return RunRequest(run_key=cursor)


defs = Definitions(
    assets=[*ALL_ASSETS, finance_models],
    asset_checks=ALL_CHECKS,
    jobs=[rankings_job, attribution_job, daily_job, archive_job],
    schedules=schedules,
    sensors=[new_events_sensor],
    resources={
        "clickhouse": ClickHouseResource(url=os.environ.get("SCO_CLICKHOUSE_URL", "")),
        "postgres": PostgresResource(url=os.environ.get("SCO_POSTGRES_URL", "")),
        "provider": ProviderFeedResource(base_url=os.environ.get("SCO_PROVIDER_URL", "")),
        "settings": AnalyticsSettings(region=os.environ.get("SCO_REGION", "r1"),
                                      as_of=os.environ.get("SCO_ANALYTICS_AS_OF", ""),
                                      archive_dir=os.environ.get("SCO_ARCHIVE_DIR", ".sco/archive")),
        "dbt": dbt_resource(),
    },
)
