"""Event shipping: the spooled events go to JetStream oldest first, a batch in flight, retried with backoff.

The spool is the source of truth (ADR-15): an event leaves it only once JetStream has acknowledged it, under
its event id as ``Nats-Msg-Id`` so a retry after a lost acknowledgement is deduplicated by the server. A
batch (64 events) is published at once and each event deleted when its own acknowledgement came; a failure
keeps the rest for the next pass. File reads and deletes run on a worker thread of their own, never on the
event loop and never queued behind the spool writer's fsync'd appends (72 of 10,000 events shipped
in 40 s under a flood when they shared the writer thread); shipping waits while a drain's first action is
pending: the notice path first.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .drain.engine import yield_to_first_actions
from .events import subject_of
from .metrics import Metrics
from .spool import Spool, SpoolEntry

__all__ = ["EventShipper", "wake_soon"]

log = logging.getLogger("sco.agent")


class EventShipper:
    """Ships the spool over whatever NATS connection the agent holds; woken by ``wake`` (new event, reconnect)."""

    def __init__(self, spool: Spool, writer: ThreadPoolExecutor, metrics: Metrics, wake: asyncio.Event,
                 connection: Callable[[], Any], closing: Callable[[], bool]) -> None:
        """Ship ``spool`` over ``connection()`` until ``closing()``; ``wake`` starts a pass.

        ``writer`` is the spool's writer (``flush`` waits for the appends queued on it); shipping reads and
        deletes on a thread of its own.
        """
        self.spool = spool
        self.writer = writer
        self.metrics = metrics
        self.wake = wake
        self._connection = connection
        self._closing = closing

    async def run(self) -> None:
        """Ship spooled events in order until closing; a failure keeps the spool and retries with backoff."""
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
                while batch := await asyncio.to_thread(self._read_batch):
                    await self._ship(js, batch)
                backoff = 0.5
            except Exception as exc:  # NATS down, stream missing, timeout: keep the spool, retry
                log.info("event shipping paused (%s); %d spooled", exc, self.spool.depth)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)
                self.wake.set()

    async def _ship(self, js: Any, batch: list[tuple[SpoolEntry, bytes, str, str]]) -> None:
        """Publish a batch at once; delete each event JetStream acknowledged; raise the first failure."""
        results = await asyncio.gather(*(js.publish(subject, data, timeout=2.0, headers={"Nats-Msg-Id": event_id})
                                         for _, data, event_id, subject in batch), return_exceptions=True)
        done = [entry for (entry, *_), result in zip(batch, results, strict=True)
                if not isinstance(result, BaseException)]
        await asyncio.to_thread(self._ack_batch, done)
        if done:
            self.metrics.inc("sco_agent_events_shipped_total", len(done))
        failed = next((r for r in results if isinstance(r, BaseException)), None)
        if failed is not None:
            raise failed

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
