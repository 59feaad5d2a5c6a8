"""The event sensor: one pass of issue 3's ingest (JetStream → ClickHouse, when NATS is configured), then a
ranking run when the event history moved (``orchestration.ingest``)."""

import os

from dagster import RunRequest, SensorEvaluationContext, SkipReason, sensor

from orchestration.defs.rankings.schedules import rankings_job
from orchestration.ingest import events_cursor, ingest_pending
from orchestration.resources import ClickHouseResource

__all__ = ["new_events_sensor"]


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
    cursor = events_cursor(clickhouse)
    if cursor is None or cursor == context.cursor:
        return SkipReason("no new events")
    context.update_cursor(cursor)
    return RunRequest(run_key=cursor)
