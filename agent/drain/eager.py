"""A scheduler call awaited eagerly: no timer is armed for a call that answers without waiting.

``bounded(coro, timeout)`` runs the coroutine's first step in the caller's task. An asyncio twin that answers
at once (an in-memory scheduler, a cached answer) returns there: it cannot be slow, so no ``asyncio.timeout``
(a timer handle, a heap push and a cancel) is paid for it. A call that suspends finishes in the same task under
``asyncio.timeout(timeout)``, exactly as if it had been awaited under the timeout from the start: the futures it
waits on are handed to the task, and a cancellation (the timeout's) is thrown into it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from typing import Any, Generic, TypeVar

__all__ = ["bounded"]

T = TypeVar("T")


async def bounded(coro: Coroutine[Any, Any, T], timeout: float) -> T:
    """``await coro`` bounded by ``timeout`` seconds (``TimeoutError``); no timer if it answers at once."""
    try:
        waiting = coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    async with asyncio.timeout(timeout):
        return await _Started(coro, waiting)


class _Started(Generic[T]):
    """A coroutine whose first step has run and that waits on ``waiting``: awaiting this finishes it."""

    def __init__(self, coro: Coroutine[Any, Any, T], waiting: Any) -> None:
        self._coro = coro
        self._waiting = waiting

    def __await__(self) -> Generator[Any, None, T]:
        return _resume(self._coro, self._waiting)


def _resume(coro: Coroutine[Any, Any, T], waiting: Any) -> Generator[Any, None, T]:
    """Hand what the coroutine waits on to the running task; throw what the task throws into the coroutine."""
    while True:
        try:
            yield waiting
        except BaseException as exc:  # a cancellation (the timeout's), or what the task throws
            try:
                waiting = coro.throw(exc)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            continue
        return (yield from coro.__await__())  # the wait is over: resume it, and await the rest as usual
