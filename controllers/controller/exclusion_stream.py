"""The streaming exclusion watcher (ADR-07): a durable JetStream consumer on the region's lifecycle events
that feeds ``ExclusionWatcher`` and writes each exclusion — with its evidence — to PostgreSQL and an
``excluded`` event to the outbox, within seconds of the event that tripped it. Messages are acknowledged after
the write, so a crash replays them (the watcher ignores event ids it has seen; the write is an upsert).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import Any

from contracts.events import Event, EventKind
from contracts.subjects import EVENT_SUBJECT_PREFIX, EVENTS_STREAM

from .exclusion import Exclusion, ExclusionConfig, ExclusionWatcher, Signal
from .store import Store

__all__ = ["ExclusionStream", "excluded_event", "signal_of"]

log = logging.getLogger(__name__)


def signal_of(ev: Event) -> Signal:
    """The fields of a lifecycle event the watcher reads (``age_s``: the instance's age when reclaimed)."""
    age = ev.attributes.get("age_s")
    return Signal(str(ev.kind), ev.pool or "", ev.time, str(ev.event_id), ev.instance or "",
                  float(age) if isinstance(age, int | float) else None, drill=ev.drill)


def excluded_event(ex: Exclusion, region: str) -> Event:
    """The ``excluded`` lifecycle event of an exclusion."""
    return Event(kind=EventKind.EXCLUDED, time=ex.excluded_at, region=region, pool=ex.pool, cause=ex.reason,
                 source="exclusion-watcher", attributes={
                     "until": ex.until.isoformat(), "probation_until": ex.probation_until.isoformat(),
                     "offences": ex.offences, "exclusion_cause": ex.cause, "evidence": ",".join(ex.evidence)[:2000]})


class ExclusionStream:
    def __init__(self, store: Store, config: ExclusionConfig | None = None) -> None:
        self.store = store
        offences, active = store.exclusions()
        self.watcher = ExclusionWatcher.from_store(config or ExclusionConfig(), offences, active)
        self.excluded: list[tuple[Exclusion, datetime]] = []   # (exclusion, wall time written) for latency
        self.seen = 0

    def feed(self, ev: Event, now: datetime) -> Exclusion | None:
        """Observe one event; the exclusion it triggers (stored with its event), or None."""
        self.seen += 1
        ex = self.watcher.observe(signal_of(ev))
        if ex is not None:
            self.store.write_exclusion(ex, excluded_event(ex, self.store.region))
            self.excluded.append((ex, now))
            log.info("excluded pool %s: %s", ex.pool, ex.reason)
        return ex

    async def run(self, js: Any, stop: asyncio.Event, clock: Any, *, batch: int = 256) -> None:
        """Consume the region's events from JetStream until ``stop`` is set."""
        region = self.store.region
        sub = await js.pull_subscribe(f"{EVENT_SUBJECT_PREFIX}.{region}.>", durable=f"sco-exclusion-{region}",
                                      stream=EVENTS_STREAM)
        while not stop.is_set():
            try:
                msgs = await sub.fetch(batch, timeout=0.25)
            except TimeoutError:
                continue
            except Exception as exc:
                if type(exc).__name__ == "TimeoutError":
                    continue
                log.warning("exclusion stream: %s: %s", type(exc).__name__, exc)
                await asyncio.sleep(0.5)
                continue
            for m in msgs:
                try:
                    ev = Event.from_json(m.data)
                except Exception:
                    await m.ack()
                    continue
                await asyncio.to_thread(self.feed, ev, clock.now())
                await m.ack()
