"""The live service loop (``RegionService.serve``, ticking on the wall clock) on a virtual clock: a drill's
notice reaches NATS without any time passing, and the instance is deleted no sooner than 120 s later. The test
moves the region's clock itself, so it takes a second, not two minutes, and load cannot move its deadlines."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from contracts.events import Event
from contracts.provider import LaunchRequest, Notice, OwnerTags
from contracts.subjects import EventKind, event_subject

from .helpers import START

LIMIT_S = 60.0  # how long a broken build takes to fail; a working one needs a few ticks


async def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + LIMIT_S
    while not condition():
        assert time.monotonic() < deadline, f"not within {LIMIT_S:.0f} s: {what}"
        await asyncio.sleep(0.01)


async def _drill(nats_url: str) -> dict[str, Any]:
    import nats

    from controllers.simregion.clock import VirtualClock
    from controllers.simregion.config import RegionConfig
    from controllers.simregion.region import SimulatedRegion
    from controllers.simregion.service import RegionService

    clock = VirtualClock(START)
    region = SimulatedRegion(RegionConfig(seed=2, background=False), clock)
    service = RegionService(region, nats_url=nats_url, tick_s=0.05)
    steps = [0]
    live_step = service.step

    async def counted_step() -> None:  # the serve loop's passes, so the test knows one ran after a clock move
        await live_step()
        steps[0] += 1

    service.step = counted_step  # type: ignore[method-assign]

    async def passes(n: int) -> None:
        target = steps[0] + n
        await _until(lambda: steps[0] >= target, f"{n} passes of the serve loop")

    await service.start()
    stop = asyncio.Event()
    loop_task = asyncio.create_task(service.serve(stop))
    nc = await nats.connect(nats_url)
    got: dict[str, Any] = {}

    async def on_notice(msg: Any) -> None:
        got["notice"], got["notice_clock"] = Notice.model_validate_json(msg.data), clock.now()

    async def on_event(msg: Any) -> None:
        event = Event.from_json(msg.data)
        if event.kind is EventKind.TERMINATED:
            got["deleted"], got["deleted_clock"] = event, clock.now()

    pool = next(p.pool_id for p in region.catalogue().pools if p.purchase_model == "reclaimable")
    (inst,) = region.launch(LaunchRequest(pool_id=pool, count=1,
                                          owner=OwnerTags(workload="w", pool=pool, partition="r1/a", generation=1)))
    await nc.subscribe(f"sco.notice.r1.{inst.instance_id}", cb=on_notice)
    await nc.subscribe(event_subject("r1", EventKind.TERMINATED, inst.instance_id), cb=on_event)
    await nc.flush()
    got["reclaimed_clock"] = reclaimed = clock.now()
    region.reclaim((inst.instance_id,))
    await _until(lambda: "notice" in got, "the notice on NATS")  # the clock stands still meanwhile
    for _ in range(17):  # to 119 s after the reclaim in 7 s steps, one pass of the loop after each
        clock.advance(timedelta(seconds=7))
        await passes(1)
    await passes(2)
    await nc.flush()
    got["deleted_before_120_s"] = "deleted" in got
    clock.advance_to(reclaimed + timedelta(seconds=120))
    await _until(lambda: "deleted" in got, "the deletion on NATS")
    stop.set()
    await loop_task
    await nc.close()
    await service.stop()
    return got


def test_a_drill_notice_arrives_on_nats_at_once_and_deletion_follows_no_sooner_than_120_s(nats_url: str) -> None:
    got = asyncio.run(_drill(nats_url))
    reclaimed: datetime = got["reclaimed_clock"]
    assert got["notice_clock"] == reclaimed  # delivered by the live loop with no (virtual) time passing
    assert got["notice"].issued_at == reclaimed
    assert not got["deleted_before_120_s"]
    assert got["deleted_clock"] >= reclaimed + timedelta(seconds=120)
    assert got["deleted"].time - got["notice"].issued_at >= timedelta(seconds=120)
    assert got["notice"].drill and got["deleted"].drill and got["deleted"].cause == "drill"
