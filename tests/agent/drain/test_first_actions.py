"""The first-action gate: a drain's later steps wait until the burst of first actions is over."""

from __future__ import annotations

import asyncio
import functools

from agent.drain import first_actions
from agent.drain.first_actions import FirstActions, PendingAction, first_actions_pending, yield_to_first_actions


def test_the_gate_stays_closed_while_notices_keep_coming_and_opens_once_the_burst_is_quiet() -> None:
    async def go() -> tuple[list[str], float]:
        loop = asyncio.get_running_loop()
        seen: list[str] = []

        async def later_steps() -> None:
            await yield_to_first_actions()
            seen.append(f"later steps after {len(seen)} first actions")

        waiter = asyncio.create_task(later_steps())
        start = loop.time()
        for k in range(5):  # five first actions, 10 ms apart: each done before the next begins
            action = PendingAction()
            await asyncio.sleep(0)
            action.done()
            seen.append(f"first action {k}")
            await asyncio.sleep(0.01)
        await waiter
        return seen, loop.time() - start

    seen, took = asyncio.run(go())
    assert seen[-1] == "later steps after 5 first actions"
    assert took >= 0.04 + first_actions.QUIET_S * 0.9  # opened only once no drain began for QUIET_S


def test_work_deferred_behind_the_gate_runs_in_order_when_it_opens_and_at_once_when_it_is_open() -> None:
    async def go() -> tuple[list[str], list[str], int]:
        ran: list[str] = []
        actions = [PendingAction() for _ in range(3)]
        for k in range(3):
            FirstActions.after(functools.partial(ran.append, f"drain {k}"))
        before = list(ran)
        for action in actions:
            action.done()
        pending_after = first_actions_pending()
        await yield_to_first_actions()
        FirstActions.after(lambda: ran.append("open"))
        return before, ran, pending_after

    before, ran, pending = asyncio.run(go())
    assert before == [] and pending == 0 and ran == ["drain 0", "drain 1", "drain 2", "open"]


def test_a_steady_stream_of_drains_holds_the_later_steps_no_longer_than_max_hold() -> None:
    async def go() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        stop = False

        async def stream() -> None:  # a drain begins every 5 ms, for ever: never quiet
            while not stop:
                action = PendingAction()
                action.done()
                await asyncio.sleep(0.005)

        feeder = asyncio.create_task(stream())
        await asyncio.sleep(0)
        await yield_to_first_actions()
        took = loop.time() - start
        stop = True
        await feeder
        return took

    took = asyncio.run(go())
    assert first_actions.MAX_HOLD_S * 0.9 <= took < first_actions.MAX_HOLD_S + 0.5


def test_a_pending_first_action_holds_the_gate_whatever_the_time() -> None:
    async def go() -> tuple[bool, bool]:
        action = PendingAction()
        waiter = asyncio.create_task(yield_to_first_actions())
        await asyncio.sleep(first_actions.MAX_HOLD_S + 0.1)
        held = not waiter.done()
        action.done()
        await asyncio.wait_for(waiter, 1.0)
        return held, waiter.done()

    assert asyncio.run(go()) == (True, True)
