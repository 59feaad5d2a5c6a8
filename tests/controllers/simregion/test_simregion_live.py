"""On the wall clock: a drill's notice reaches NATS at once and the instance is deleted no sooner than 120 s
later (the one test in this area that waits in real time)."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import pytest

from contracts.events import Event
from contracts.provider import LaunchRequest, Notice, OwnerTags
from contracts.subjects import EventKind


async def _drill(nats_url: str) -> dict[str, Any]:
    import nats

    from controllers.simregion.clock import WallClock
    from controllers.simregion.config import RegionConfig
    from controllers.simregion.region import SimulatedRegion
    from controllers.simregion.service import RegionService

    region = SimulatedRegion(RegionConfig(seed=2, background=False), WallClock())
    service = RegionService(region, nats_url=nats_url, tick_s=0.05)
    await service.start()
    stop = asyncio.Event()
    loop_task = asyncio.create_task(service.serve(stop))
    nc = await nats.connect(nats_url)
    got: dict[str, Any] = {}
    deleted = asyncio.Event()

    async def on_notice(msg: Any) -> None:
        got["notice"], got["notice_at"] = Notice.model_validate_json(msg.data), time.monotonic()

    async def on_event(msg: Any) -> None:
        event = Event.from_json(msg.data)
        if event.kind is EventKind.TERMINATED:
            got["deleted"], got["deleted_at"] = event, time.monotonic()
            deleted.set()

    pool = next(p.pool_id for p in region.catalogue().pools if p.purchase_model == "reclaimable")
    (inst,) = region.launch(LaunchRequest(pool_id=pool, count=1,
                                          owner=OwnerTags(workload="w", pool=pool, partition="r1/a", generation=1)))
    await nc.subscribe(f"sco.notice.r1.{inst.instance_id}", cb=on_notice)
    await nc.subscribe("sco.events.r1.terminated", cb=on_event)
    await nc.flush()
    got["reclaimed_at"] = time.monotonic()
    region.reclaim((inst.instance_id,))
    await asyncio.wait_for(deleted.wait(), 150)
    stop.set()
    await loop_task
    await nc.close()
    await service.stop()
    return got


@pytest.mark.slow
@pytest.mark.timeout(200)
def test_a_drill_notice_arrives_on_nats_within_a_second_and_deletion_follows_no_sooner_than_120_s(
        nats_url: str) -> None:
    got = asyncio.run(_drill(nats_url))
    assert got["notice_at"] - got["reclaimed_at"] < 1.0
    assert got["deleted_at"] - got["reclaimed_at"] >= 120.0  # the notice (delivered in < 1 s) led by >= 119 s
    assert got["deleted"].time - got["notice"].issued_at >= timedelta(seconds=120)
    assert got["notice"].drill and got["deleted"].drill and got["deleted"].cause == "drill"
