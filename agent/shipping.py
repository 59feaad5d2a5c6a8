"""Event shipping: the spooled events go to JetStream in order, acknowledged one by one, retried with backoff.

The spool is the source of truth (ADR-15): an event leaves it only once JetStream has acknowledged it, under
its event id as ``Nats-Msg-Id`` so a retry after a lost acknowledgement is deduplicated by the server. File
reads and deletes run on the spool's writer thread, never on the event loop, and shipping waits while a
drain's first action is pending: the notice path first.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .drain import yield_to_first_actions
from .events import subject_of
from .metrics import Metrics
from .spool import Spool, SpoolEntry

__all__ = ["EventShipper", "wake_soon"]

log = logging.getLogger("sco.agent")


class EventShipper:
    """Ships the spool over whatever NATS connection the agent holds; woken by ``wake`` (new event, reconnect)."""

    def __init__(self, spool: Spool, writer: ThreadPoolExecutor, metrics: Metrics, wake: asyncio.Event,
                 connection: Callable[[], Any], closing: Callable[[], bool]) -> None:
        """Ship ``spool`` (read on ``writer``) over ``connection()`` until ``closing()``; ``wake`` starts a pass."""
        self.spool = spool
        self.writer = writer
        self.metrics = metrics
        self.wake = wake
        self._connection = connection
        self._closing = closing

    async def run(self) -> None:
        """Ship spooled events in order until closing; a failure keeps the spool and retries with backoff."""
        loop = asyncio.get_running_loop()
        backoff = 0.5
        while not self._closing():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), timeout=30)
            self.wake.clear()
            await yield_to_first_actions()
            nc = self._connection()
            if nc is None or not nc.is_connected:
                continue
            js = nc.jetstream()
            try:
                while True:
                    batch = await loop.run_in_executor(self.writer, self._read_batch)
                    if not batch:
                        break
                    done = []
                    try:
                        for entry, data, event_id, subject in batch:
                            await js.publish(subject, data, timeout=2.0, headers={"Nats-Msg-Id": event_id})
                            done.append(entry)
                            self.metrics.inc("sco_agent_events_shipped_total")
                    finally:
                        await loop.run_in_executor(self.writer, self._ack_batch, done)
                backoff = 0.5
            except Exception as exc:  # NATS down, stream missing, timeout: keep the spool, retry
                log.info("event shipping paused (%s); %d spooled", exc, self.spool.depth)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)
                self.wake.set()

    def _read_batch(self, limit: int = 64) -> list[tuple[SpoolEntry, bytes, str, str]]:
        out = []
        for entry in self.spool.head(limit):
            try:
                data = entry.path.read_bytes()
                event = json.loads(data)
            except (OSError, ValueError):
                self.spool.ack(entry)  # dropped by the bound meanwhile, or unreadable: nothing to ship
                continue
            out.append((entry, data, str(event["event_id"]), subject_of(event)))
        return out

    def _ack_batch(self, entries: list[SpoolEntry]) -> None:
        for entry in entries:
            self.spool.ack(entry)

    async def flush(self, monotonic: Callable[[], float], timeout: float = 10.0) -> bool:
        """Wait until the spool is empty (tests, shutdown). Returns False on timeout."""
        end = monotonic() + timeout
        await asyncio.get_running_loop().run_in_executor(self.writer, lambda: None)
        while self.spool.depth and monotonic() < end:
            self.wake.set()
            await asyncio.sleep(0.05)
        return self.spool.depth == 0


def wake_soon(loop: asyncio.AbstractEventLoop, wake: asyncio.Event) -> None:
    """Set ``wake`` from another thread (the spool writer's, once an event is on disk)."""
    with contextlib.suppress(RuntimeError):  # the loop is closed: the next process ships the spool
        loop.call_soon_threadsafe(wake.set)
