"""The rollout's observation protocol over events kept in memory: the test double beside
``distributor.ClickHouseGates`` (the same counting, ``figures_from_counts``)."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from contracts.events import Event
from distributor import GateFigures, figures_from_counts


class RecordedGates:
    """Events recorded by the test (from real agents' refusals, or written by hand); ``down`` makes reads fail."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.down = False

    def record(self, event: Event) -> None:
        self.events.append(event)

    def figures(self, partition: str, since: datetime, until: datetime) -> GateFigures:
        if self.down:
            raise OSError("the event store is unreachable (test double)")
        seen = {e.event_id: e for e in self.events if e.partition == partition and since <= e.time < until}
        wasted = sum(float(e.attributes.get("wasted_s") or 0) for e in seen.values()
                     if str(e.kind) in ("drained", "overrun"))
        return figures_from_counts(Counter(str(e.kind) for e in seen.values()), wasted)
