"""Waiting on a condition instead of a fixed sleep: fast when the machine is idle, patient when it is loaded."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["until", "wait_for"]


def wait_for(predicate: Callable[[], bool], timeout: float = 30.0, interval: float = 0.02, what: str = "") -> None:
    """Return as soon as ``predicate()`` is true; fail the test when it is still false after ``timeout`` s.

    The limit is generous on purpose: it only decides how long a broken build takes to fail.
    """
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return
        if time.monotonic() >= deadline:
            raise AssertionError(f"condition not met within {timeout:.0f} s: {what or predicate}")
        time.sleep(interval)


async def until(done: Callable[[], bool], seconds: float = 60.0, interval: float = 0.02) -> bool:
    """In a coroutine: return as soon as ``done()`` holds, or after ``seconds``; whether it held.

    Unlike ``wait_for`` it does not fail by itself: the caller's assert on what arrived says what went wrong. A
    loaded machine delivers late, never not at all, so the deadline is generous: it only bounds a broken build.
    """
    deadline = asyncio.get_running_loop().time() + seconds
    while not done():
        if asyncio.get_running_loop().time() >= deadline:
            return False
        await asyncio.sleep(interval)
    return True
