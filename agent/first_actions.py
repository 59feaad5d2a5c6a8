"""The first-action gate (ADR-14).

Drains in this process whose first action (taint/cordon, Slurm drain) is still pending. Everything else a drain
does, and the event shipping, waits while any is pending.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import ClassVar

__all__ = ["FirstActions", "PendingAction", "first_actions_pending", "yield_to_first_actions"]


class FirstActions:
    """Drains in this process whose first action is still pending.

    Everything else a drain does (and the
    event shipping) waits while any is pending: the taint/cordon bounds the 2 s target, the rest has the
    drain budget. One ``asyncio.Event`` per event loop, set when nothing is pending.
    """

    pending = 0
    _idle: ClassVar[weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Event]] = weakref.WeakKeyDictionary()

    @classmethod
    def _event(cls) -> asyncio.Event:
        loop = asyncio.get_running_loop()
        event = cls._idle.get(loop)
        if event is None:
            event = cls._idle[loop] = asyncio.Event()
            if cls.pending == 0:
                event.set()
        return event

    @classmethod
    def begin(cls) -> None:
        """A drain's first action is now pending."""
        cls.pending += 1
        cls._event().clear()

    @classmethod
    def end(cls) -> None:
        """A pending first action is done (or gave up)."""
        cls.pending = max(0, cls.pending - 1)
        if cls.pending == 0:
            cls._event().set()

    @classmethod
    async def yield_to_pending(cls) -> None:
        """Return once no first action is pending."""
        if cls.pending > 0:
            await cls._event().wait()


class PendingAction:
    """One drain's first action, counted pending from creation until ``done()`` (idempotent).

    Created when the drain is launched, not when its task first runs: a burst of notices holds the gate from the
    first notice on, so no drain's later steps run between the first actions of the others.
    """

    def __init__(self) -> None:
        """Count one more pending first action."""
        FirstActions.begin()
        self._open = True

    def done(self) -> None:
        """This first action is done (or gave up, or its drain ended); later calls do nothing."""
        if self._open:
            self._open = False
            FirstActions.end()


def first_actions_pending() -> int:
    """How many drains in this process still wait for their first action."""
    return FirstActions.pending


async def yield_to_first_actions() -> None:
    """Return once no drain in this process is waiting for its first action."""
    await FirstActions.yield_to_pending()
