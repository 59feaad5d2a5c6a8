"""The first-action gate (ADR-14).

Drains in this event loop whose first action (taint/cordon, Slurm drain) is still pending. Everything else a
drain does (its plan, its events, its evictions) and the event shipping wait until the gate opens: no first
action pending, and none begun for ``QUIET_S`` seconds and ``QUIET_TURNS`` turns of the loop — a burst of
notices is over (its messages already in the sockets are read in those turns, however starved the process is).
A gate closed for ``MAX_HOLD_S`` opens as soon as nothing is pending, so a steady stream of drains does not hold
the others' later steps for ever. The taint/cordon bounds the 2 s target; the rest has the drain budget.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import ClassVar

__all__ = ["MAX_HOLD_S", "QUIET_S", "QUIET_TURNS", "FirstActions", "PendingAction", "first_actions_pending",
           "yield_to_first_actions"]

QUIET_S = 0.02  # no drain began for this long ...
QUIET_TURNS = 3  # ... nor in this many turns of the loop: the burst is over
MAX_HOLD_S = 1.0  # a gate closed this long opens once nothing is pending, quiet or not


class _Gate:
    """One event loop's gate: pending first actions, drains begun, and the event set while open."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.pending = 0
        self.begun = 0
        self.last_begin = float("-inf")
        self.closed_at = 0.0
        self.open = asyncio.Event()
        self.open.set()
        self.keeper: asyncio.Task[None] | None = None
        self.deferred: list[Callable[[], None]] = []  # run when the gate opens, in order

    def begin(self) -> None:
        self.pending += 1
        self.begun += 1
        self.last_begin = now = self.loop.time()
        if self.open.is_set():
            self.closed_at = now
            self.open.clear()

    def end(self) -> None:
        self.pending = max(0, self.pending - 1)
        if self.pending == 0 and not self.open.is_set() and (self.keeper is None or self.keeper.done()):
            self.keeper = self.loop.create_task(self._settle(), name="sco-first-actions-gate")

    async def _settle(self) -> None:
        """Open the gate once the burst is over (or it was held ``MAX_HOLD_S``).

        Returns without opening it when a first action is pending again: ``end`` starts the next wait.
        """
        while self.pending == 0:
            seen = self.begun
            wait = self.last_begin + QUIET_S - self.loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            for _ in range(QUIET_TURNS):
                await asyncio.sleep(0)
            held = self.loop.time() - self.closed_at >= MAX_HOLD_S
            if self.pending == 0 and (self.begun == seen or held):
                self.open.set()
                deferred, self.deferred = self.deferred, []
                for run in deferred:
                    run()
                return


class FirstActions:
    """The gate of the running event loop: drains whose first action is pending, and the wait for the burst."""

    _gates: ClassVar[weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Gate]] = weakref.WeakKeyDictionary()

    _last: _Gate | None = None  # the last gate looked up: a notice's path asks twice, on the same loop

    @classmethod
    def _gate(cls) -> _Gate:
        loop = asyncio.get_running_loop()
        gate = cls._last
        if gate is not None and gate.loop is loop:
            return gate
        gate = cls._gates.get(loop)
        if gate is None:
            gate = cls._gates[loop] = _Gate(loop)
        cls._last = gate
        return gate

    @classmethod
    def begin(cls) -> None:
        """A drain's first action is now pending: the gate closes."""
        cls._gate().begin()

    @classmethod
    def end(cls) -> None:
        """A pending first action is done (or gave up)."""
        cls._gate().end()

    @classmethod
    def after(cls, run: Callable[[], None]) -> None:
        """Call ``run`` once the gate is open: now when it is, else when it opens (no task meanwhile)."""
        gate = cls._gate()
        if gate.open.is_set():
            run()
        else:
            gate.deferred.append(run)

    @classmethod
    def pending(cls) -> int:
        """First actions pending in the running loop (0 outside one)."""
        try:
            return cls._gate().pending
        except RuntimeError:
            return 0

    @classmethod
    async def yield_to_pending(cls) -> None:
        """Return once the gate is open: no first action pending and the burst over."""
        gate = cls._gate()
        if not gate.open.is_set():
            await gate.open.wait()


class PendingAction:
    """One drain's first action, counted pending from creation until ``done()`` (idempotent).

    Created when the notice is taken, before its first action is issued: a burst of notices holds the gate from
    the first notice on, so no drain's later steps run between the first actions of the others.
    """

    __slots__ = ("_gate", "_open")

    def __init__(self) -> None:
        """Count one more pending first action."""
        self._gate = FirstActions._gate()
        self._gate.begin()
        self._open = True

    def done(self) -> None:
        """This first action is done (or gave up, or its drain ended); later calls do nothing."""
        if self._open:
            self._open = False
            self._gate.end()


def first_actions_pending() -> int:
    """How many drains in the running event loop still wait for their first action."""
    return FirstActions.pending()


async def yield_to_first_actions() -> None:
    """Return once no drain in this event loop waits for its first action and the burst of notices is over."""
    await FirstActions.yield_to_pending()
