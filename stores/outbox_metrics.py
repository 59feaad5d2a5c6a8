"""The outbox relay's metrics (ADR-28): rows not yet published and the age of the oldest.

Read when Prometheus scrapes (one small query on a connection of the metrics' own). Names: docs/operations.md
"## Metrics".
"""

from __future__ import annotations

import threading
from typing import Any

from .telemetry import Registry

__all__ = ["SERIES", "watch"]

SERIES: tuple[tuple[str, str, str], ...] = (
    ("sco_outbox_depth_rows", "gauge", "Outbox rows not yet published to the event stream."),
    ("sco_outbox_oldest_row_age_seconds", "gauge", "Age of the oldest unpublished outbox row (0 when none)."),
)
_QUERY = ("SELECT count(*), coalesce(extract(epoch FROM now() - min(created_at)), 0) FROM outbox "
          "WHERE sent_at IS NULL")


def watch(registry: Registry, conn: Any) -> None:
    """Describe the series and refresh them on every scrape."""
    registry.describe_all(SERIES)
    lock = threading.Lock()

    def collect(r: Registry) -> None:
        with lock, conn.transaction():
            row = conn.execute(_QUERY).fetchone()
        depth, age = (row if row is not None else (0, 0))
        r.set("sco_outbox_depth_rows", float(depth))
        r.set("sco_outbox_oldest_row_age_seconds", float(age))

    registry.on_collect(collect)
