"""Replacement on notice or loss (ADR-09): a subscription to the region's lifecycle events wakes the
controller at once, so the replacement is requested while the node drains — nothing on the node waits for it.
The pass itself stays level-triggered (a notified instance no longer counts toward the plan, so the diff
launches its replacement); the message only shortens the wait and feeds the interruption-rate signal.

``run`` drives ``Controller.step`` every ``interval_s`` or sooner when woken, off the event loop thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from contracts.events import Event
from contracts.subjects import EVENT_SUBJECT_PREFIX, RECLAIM_KINDS, EventKind, is_reclaim
from stores.postgres import failure_code

from .loop import Controller, PassReport

__all__ = ["WAKE_KINDS", "Waker", "run"]

log = logging.getLogger(__name__)
WAKE_KINDS = RECLAIM_KINDS | {EventKind.LOST, EventKind.TERMINATED}


class Waker:
    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.event = asyncio.Event()
        self.woken = 0
        self._sub: Any = None

    async def start(self, nc: Any) -> None:
        """Subscribe to the region's events to wake the controller early."""
        region = self.controller.s.region
        self._sub = await nc.subscribe(f"{EVENT_SUBJECT_PREFIX}.{region}.>", cb=self._on)

    async def stop(self) -> None:
        """Unsubscribe."""
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()

    async def _on(self, msg: Any) -> None:
        try:
            ev = Event.from_json(msg.data)
        except Exception:  # not ours to judge: the ingest dead-letters it
            return
        if str(ev.kind) not in WAKE_KINDS or (ev.partition and ev.partition != self.controller.s.partition):
            return
        if is_reclaim(ev.kind, ev.drill) and ev.workload:
            self.controller.record_notice(ev.workload, ev.time)
        self.woken += 1
        self.event.set()


async def run(controller: Controller, nc: Any | None, *, interval_s: float = 5.0, stop: asyncio.Event | None = None,
              on_pass: Callable[[PassReport], Awaitable[None] | None] | None = None) -> None:
    """Passes until ``stop`` is set: every ``interval_s``, or at once after a notice or loss."""
    stop = stop or asyncio.Event()
    waker = Waker(controller)
    if nc is not None:
        await waker.start(nc)
    try:
        while not stop.is_set():
            waker.event.clear()
            try:
                report = await asyncio.to_thread(controller.step)
            except Exception as exc:  # a dependency away costs convergence, never the process
                # PG001: PostgreSQL lost or read-only (a failover): the next pass reconnects to the new primary
                code = failure_code(exc) or "CTL001"
                log.warning("%s controller pass failed: %s: %s", code, type(exc).__name__, exc)
                report = None
            if report is not None and on_pass is not None:
                result = on_pass(report)
                if result is not None:
                    await result
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(_first(waker.event, stop), timeout=interval_s)
    finally:
        await waker.stop()


async def _first(*events: asyncio.Event) -> None:
    tasks = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in tasks:
            t.cancel()
