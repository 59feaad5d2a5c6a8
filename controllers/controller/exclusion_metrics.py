"""The exclusion watcher's metrics (ADR-28): events read, exclusions made, pools excluded, open waves.

Computed when Prometheus scrapes, from the running ``ExclusionStream`` and the ``exclusions`` table (on a
connection of the metrics' own). Names: docs/operations.md "## Metrics".
"""

from __future__ import annotations

import threading
from typing import Any

from stores.telemetry import Labels, Registry

from .exclusion_stream import ExclusionStream

__all__ = ["SERIES", "watch"]

SERIES: tuple[tuple[str, str, str], ...] = (
    ("sco_exclusion_events_total", "counter", "Lifecycle events the exclusion watcher read from the stream."),
    ("sco_exclusion_exclusions_total", "counter", "Pools this watcher excluded since it started."),
    ("sco_exclusion_pool_excluded", "gauge", "1 while the pool is excluded (the exclusions table)."),
    ("sco_exclusion_open_waves", "gauge", "Reclamation waves of a pool inside the window (three exclude it)."),
)


def watch(registry: Registry, stream: ExclusionStream, conn: Any) -> None:
    """Describe the series and refresh them on every scrape."""
    registry.describe_all(SERIES)
    lock = threading.Lock()
    region = stream.store.region

    def collect(r: Registry) -> None:
        r.set("sco_exclusion_events_total", float(stream.seen))
        r.set("sco_exclusion_exclusions_total", float(len(stream.excluded)))
        r.replace("sco_exclusion_open_waves",
                  {(("pool", pool),): float(n) for pool, n in stream.watcher.open_waves().items()})
        with lock, conn.transaction():
            rows = conn.execute("SELECT pool FROM exclusions WHERE region = %s AND (until IS NULL OR until > now())",
                                (region,)).fetchall()
        excluded: dict[Labels, float] = {(("pool", str(row[0])),): 1.0 for row in rows}
        r.replace("sco_exclusion_pool_excluded", excluded)

    registry.on_collect(collect)
