"""The event ingest's metrics (ADR-28), sampled beside the ingest, never inside its loop.

The durable consumer's lag in messages and in seconds (the age of the oldest event not yet acknowledged), the
stream sequence it has acknowledged (a counter: ``rate()`` is events/s), the dead letters by reason class, and
the savings ledger's last 24 hours of orchestrator cost and gross saving (for the 2 % ceiling, ADR-26).

``IngestSampler`` runs on a daemon thread with its own event loop and connections (the ingest's user), every
``interval_s``; a store that is away leaves the last values and logs. Names: docs/operations.md "## Metrics".
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import threading
from collections.abc import Callable
from typing import Any

from contracts.subjects import EVENTS_STREAM

from .telemetry import Labels, Registry

__all__ = ["SERIES", "IngestSampler", "reason_class"]

log = logging.getLogger(__name__)
SERIES: tuple[tuple[str, str, str], ...] = (
    ("sco_ingest_lag_messages", "gauge", "Events in the stream not yet acknowledged by the ingest's consumer."),
    ("sco_ingest_lag_seconds", "gauge", "Age of the oldest event not yet ingested (0 when none waits)."),
    ("sco_ingest_events_total", "counter", "Stream sequence acknowledged by the ingest (rate(): events/s)."),
    ("sco_ingest_dead_letters_total", "counter", "Events dead-lettered, by reason class (invalid, rejected, other)."),
    ("sco_ledger_orchestrator_cost_eur", "gauge", "The orchestrator's own cost in the savings ledger (EUR)."),
    ("sco_ledger_gross_saving_eur", "gauge", "The gross saving in the savings ledger (EUR)."),
)
_LEDGER = ("SELECT toFloat64(sum(orchestrator_eur)), toFloat64(sum(gross_saving_eur)) FROM savings_ledger FINAL "
           "WHERE hour >= now() - INTERVAL 24 HOUR")
_DEAD = "SELECT reason, count() FROM events_dead_letter GROUP BY reason"


def reason_class(reason: str) -> str:
    """A dead letter's reason, reduced to a bounded label: invalid, rejected or other."""
    text = reason.lower()
    if text.startswith("not a valid event") or "time window" in text or "outside" in text:
        return "invalid"
    if text.startswith("rejected by clickhouse"):
        return "rejected"
    return "other"


class IngestSampler:
    """Samples the consumer and ClickHouse into ``registry`` every ``interval_s`` on a thread of its own."""

    def __init__(self, registry: Registry, connect_nats: Callable[[], Any], clickhouse: Callable[[], Any], *,
                 durable: str = "sco-ingest", interval_s: float = 5.0,
                 clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)) -> None:
        self.registry, self.connect_nats, self.clickhouse = registry, connect_nats, clickhouse
        self.durable, self.interval_s, self.clock = durable, interval_s, clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        registry.describe_all(SERIES)

    def start(self) -> None:
        """Start sampling on a daemon thread."""
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), name="sco-ingest-metrics",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling (within one interval)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.interval_s + 5)

    async def _run(self) -> None:
        nc: Any = None
        ch: Any = None
        try:
            while not self._stop.is_set():
                try:
                    nc = nc or await self.connect_nats()
                    await self.sample_stream(nc.jetstream())
                except Exception as exc:  # NATS away: keep the last values
                    log.warning("ingest metrics: stream: %s: %s", type(exc).__name__, exc)
                try:
                    ch = ch or await asyncio.to_thread(self.clickhouse)
                    await asyncio.to_thread(self.sample_clickhouse, ch)
                except Exception as exc:  # ClickHouse away: keep the last values
                    log.warning("ingest metrics: clickhouse: %s: %s", type(exc).__name__, exc)
                await asyncio.to_thread(self._stop.wait, self.interval_s)
        finally:
            if nc is not None:
                await nc.close()

    async def sample_stream(self, js: Any) -> None:
        """Lag (messages, seconds) and the acknowledged sequence of the durable consumer."""
        from nats.js.errors import NotFoundError

        try:
            info = await js.consumer_info(EVENTS_STREAM, self.durable)
        except NotFoundError:  # the ingest has not bound its consumer yet: everything in the stream waits
            stream = await js.stream_info(EVENTS_STREAM)
            pending, acked = int(stream.state.messages), 0
        else:
            pending, acked = int(info.num_pending) + int(info.num_ack_pending), int(info.ack_floor.stream_seq)
        lag_s = 0.0
        if pending:
            try:
                oldest = await js.get_msg(EVENTS_STREAM, seq=acked + 1, subject=">", next=True)
                if oldest.time is not None:
                    lag_s = max(0.0, (self.clock() - oldest.time).total_seconds())
            except NotFoundError:
                lag_s = 0.0
        r = self.registry
        r.set("sco_ingest_lag_messages", float(pending))
        r.set("sco_ingest_lag_seconds", lag_s)
        r.set("sco_ingest_events_total", float(acked))

    def sample_clickhouse(self, client: Any) -> None:
        """Dead letters by reason class and the ledger's last 24 hours."""
        counts: dict[Labels, float] = {(("reason", k),): 0.0 for k in ("invalid", "rejected", "other")}
        for reason, n in client.query(_DEAD).result_rows:
            key = (("reason", reason_class(str(reason))),)
            counts[key] += float(n)
        self.registry.replace("sco_ingest_dead_letters_total", counts)
        row = client.query(_LEDGER).result_rows
        cost, saving = (row[0] if row else (0.0, 0.0))
        self.registry.set("sco_ledger_orchestrator_cost_eur", float(cost or 0.0), window="24h")
        self.registry.set("sco_ledger_gross_saving_eur", float(saving or 0.0), window="24h")
