"""The event sensor: asks for a fresh ranking when the event history in ClickHouse moved. It triggers only:
the ingest (JetStream → ClickHouse) is its own long-running service, ``sco ingest`` (``stores.ingest``), so a
slow or failing ingest never holds up the sensor daemon, and a stopped ingest shows as stale rankings (the
rankings' freshness check) rather than as a failing sensor."""

from dagster import DefaultSensorStatus, RunRequest, SensorEvaluationContext, SkipReason, sensor

from orchestration.defs.rankings.schedules import rankings_job
from orchestration.ingest import events_cursor
from orchestration.resources import ClickHouseResource

__all__ = ["new_events_sensor"]


@sensor(job=rankings_job, minimum_interval_seconds=30, default_status=DefaultSensorStatus.RUNNING)
def new_events_sensor(context: SensorEvaluationContext, clickhouse: ClickHouseResource) -> RunRequest | SkipReason:
    """Request a ranking when the number of events or the latest event time changed since the last evaluation."""
    cursor = events_cursor(clickhouse)
    if cursor is None or cursor == context.cursor:
        return SkipReason("no new events")
    context.update_cursor(cursor)
    return RunRequest(run_key=cursor)
