"""``agent.drain.eager.bounded``: a scheduler call that answers at once arms no timer; one that waits is bounded."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from agent.drain.eager import bounded


async def _at_once() -> int:
    return 7


async def _after(delay: float, value: int) -> int:
    await asyncio.sleep(delay)
    await asyncio.sleep(0)
    return value


async def _raise_at_once() -> int:
    raise ValueError("refused at once")


async def _raise_later() -> int:
    await asyncio.sleep(0.01)
    raise ValueError("refused later")


def _slow_call(cancelled: list[bool]) -> Callable[[], Coroutine[Any, Any, int]]:
    """A call that waits 5 s and records in ``cancelled`` that it was cancelled."""
    async def slow() -> int:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return 0

    return slow


def test_a_call_that_answers_at_once_returns_its_answer_without_arming_a_timer() -> None:
    async def go() -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        timers = len(loop._scheduled)  # type: ignore[attr-defined]
        answer = await bounded(_at_once(), 1.0)
        return answer, len(loop._scheduled) - timers  # type: ignore[attr-defined]

    assert asyncio.run(go()) == (7, 0)


def test_a_call_that_waits_is_finished_in_the_callers_task_with_its_answer() -> None:
    async def go() -> tuple[int, bool]:
        me = asyncio.current_task()
        tasks = len(asyncio.all_tasks())
        answer = await bounded(_after(0.02, 8), 1.0)
        return answer, asyncio.current_task() is me and len(asyncio.all_tasks()) == tasks

    assert asyncio.run(go()) == (8, True)


def test_a_call_that_outlasts_the_timeout_is_cancelled_and_raises_timeout_error() -> None:
    cancelled: list[bool] = []
    slow = _slow_call(cancelled)

    async def go() -> float:
        start = asyncio.get_running_loop().time()
        with pytest.raises(TimeoutError):
            await bounded(slow(), 0.05)
        return asyncio.get_running_loop().time() - start

    took = asyncio.run(go())
    assert cancelled == [True] and 0.04 <= took < 1.0


@pytest.mark.parametrize("call", [_raise_at_once, _raise_later])
def test_an_exception_raised_at_once_or_after_a_wait_reaches_the_caller(call: object) -> None:
    async def go() -> None:
        with pytest.raises(ValueError, match="refused"):
            await bounded(call(), 1.0)  # type: ignore[operator]

    asyncio.run(go())


def test_cancelling_the_caller_cancels_the_call_it_waits_on() -> None:
    cancelled: list[bool] = []
    slow = _slow_call(cancelled)

    async def go() -> bool:
        task = asyncio.create_task(bounded(slow(), 5.0))
        await asyncio.sleep(0.01)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return True
        return False

    assert asyncio.run(go()) and cancelled == [True]
