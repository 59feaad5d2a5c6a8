"""Contract breaches as events (ADR-27, ADR-28): a workload whose measured interruption rate exceeds its
declared tolerance gets a ``contract-breach`` event, written to the transactional outbox like every other
event of the control plane (the relay publishes it on JetStream, the ingest lands it in ClickHouse's
``events``), where the alert rules and the showback page read it. A breach never changes a contract.

One event per workload, region and day of the measurement (a deterministic ``event_id``): re-materialising the
breaches on the same day enqueues nothing twice (the outbox ignores an ``event_id`` it holds)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from contracts.events import Event, EventKind

from .insights import Breach
from .store import Postgres

__all__ = ["BREACH_CAUSE", "breach_event_id", "breach_events", "enqueue_breach_events"]

BREACH_CAUSE = "interruption-above-tolerance"


def breach_event_id(region: str, workload: str, now: datetime) -> uuid.UUID:
    """The event id of a workload's breach on ``now``'s day (UTC)."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"sco:contract-breach/{region}/{workload}/{now.date().isoformat()}")


def breach_events(found: Sequence[Breach], region: str, now: datetime, window_days: int = 30) -> list[Event]:
    """One ``contract-breach`` event per breached workload, carrying the owner, the measured and declared rates."""
    return [Event(event_id=breach_event_id(region, b.workload, now), kind=EventKind.CONTRACT_BREACH, time=now,
                  region=region, workload=b.workload, cause=BREACH_CAUSE, source="analytics",
                  attributes={"owner": b.owner, "measured_rate_pct_h": f"{b.measured_rate_pct_h:.6f}",
                              "declared_rate_pct_h": f"{b.declared_rate_pct_h:.6f}",
                              "interruptions": b.interruptions, "instance_hours": f"{b.instance_hours:.3f}",
                              "window_days": window_days})
            for b in found if b.breach]


def enqueue_breach_events(pg: Postgres, events: Sequence[Event]) -> int:
    """Write ``events`` to the outbox in one transaction; returns how many were new."""
    if not events:
        return 0
    from stores.outbox import enqueue

    with pg.connection() as conn:
        with conn.transaction():
            before = conn.execute("SELECT count(*) FROM outbox WHERE event_id = ANY(%s::uuid[])",
                                  ([str(e.event_id) for e in events],)).fetchone()[0]
            for event in events:
                enqueue(conn, event)
        conn.commit()
    return len(events) - int(before)
