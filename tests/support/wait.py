"""Waiting on a condition instead of a fixed sleep: fast when the machine is idle, patient when it is loaded."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["wait_for"]


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
