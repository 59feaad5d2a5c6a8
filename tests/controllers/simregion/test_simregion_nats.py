"""Notices and advisories on real NATS (nats-server from the wheel), mirrored in the metadata endpoint; the
lifecycle feed on JetStream. The region runs on a virtual clock that the test moves in 10 s steps."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta
from typing import Any

import aiohttp

from contracts.events import Event
from contracts.provider import Advisory, LaunchRequest, Notice, OwnerTags
from contracts.subjects import EVENTS_STREAM, EventKind

from .helpers import make_region


async def _scenario(nats_url: str) -> dict[str, Any]:
    import nats

    from controllers.simregion.service import RegionService

    region, clock = make_region(pools=15, seed=11)
    service = RegionService(region, nats_url=nats_url)
    await service.start()
    nc = await nats.connect(nats_url)
    arrivals: list[tuple[str, str, bytes]] = []  # (channel, subject, data) in arrival order
    metadata_checks: list[tuple[str, dict[str, Any]]] = []

    async def on_msg(msg: Any) -> None:
        arrivals.append((msg.subject.split(".")[1], msg.subject, msg.data))

    await nc.subscribe("sco.notice.r1.>", cb=on_msg)
    await nc.subscribe("sco.advisory.r1.>", cb=on_msg)
    await nc.subscribe("sco.events.r1.>", cb=on_msg)
    pool = next(p.pool_id for p in region.catalogue().pools if p.purchase_model == "reclaimable")
    owner = OwnerTags(workload="etl", pool=pool, partition="r1/batch", generation=3)
    (mine,) = region.launch(LaunchRequest(pool_id=pool, count=1, owner=owner))
    async with aiohttp.ClientSession() as http:
        for step in range(6 * 360):  # six virtual hours in 10 s steps
            clock.advance(timedelta(seconds=10))
            if step == 30:
                region.reclaim((mine.instance_id,))  # a drill through the same path
            seen = len(arrivals)
            await service.step()
            await nc.flush()
            await asyncio.sleep(0)
            if len(metadata_checks) < 5:
                for channel, _, data in arrivals[seen:]:
                    if channel == "notice":
                        iid = json.loads(data)["instance_id"]
                        async with http.get(f"{service.url}/metadata/{iid}") as resp:
                            metadata_checks.append((iid, await resp.json()))
        await asyncio.sleep(0.2)
        js = nc.jetstream()
        info = await js.stream_info(EVENTS_STREAM)
    await nc.close()
    await service.stop()
    return {"arrivals": arrivals, "metadata": metadata_checks, "stats": region.engine.stats, "mine": mine,
            "stream_messages": info.state.messages, "published": dict(service.published)}


def test_notices_arrive_on_nats_at_least_120_s_before_deletion_and_in_the_metadata_endpoint(nats_url: str) -> None:
    out = asyncio.run(_scenario(nats_url))
    notices: dict[str, tuple[int, Notice]] = {}
    advisories: dict[str, Advisory] = {}
    terminated: dict[str, tuple[int, Event]] = {}
    for n, (channel, _, data) in enumerate(out["arrivals"]):
        if channel == "notice":
            notice = Notice.model_validate_json(data)
            notices[notice.instance_id] = (n, notice)
        elif channel == "advisory":
            advisory = Advisory.model_validate_json(data)
            advisories[advisory.instance_id] = advisory
        else:
            event = Event.from_json(data)
            if event.kind is EventKind.TERMINATED:
                terminated[event.instance or ""] = (n, event)
    reclaimed = {k: v for k, v in terminated.items() if v[1].cause.startswith(("reclaimed", "drill", "hall"))}
    assert len(reclaimed) > 50
    without = [k for k, (_, e) in reclaimed.items() if e.cause.endswith("no-notice")]
    assert len(without) < 0.06 * len(reclaimed)
    for iid, (arrived, event) in reclaimed.items():
        if iid in without:
            assert iid not in notices
            continue
        got, notice = notices[iid]
        assert got < arrived, "the notice must arrive before the deletion"
        assert notice.terminate_at - notice.issued_at >= timedelta(seconds=120)
        assert event.time - notice.issued_at >= timedelta(seconds=120)
    advised = [iid for iid in reclaimed if iid in advisories]
    assert 0.5 < len(advised) / len(reclaimed) < 0.8
    assert all(advisories[i].issued_at < notices[i][1].issued_at for i in advised if i in notices)
    # the advisory names when the forecast reclaim lands: the notice comes then (hall-wide ones may come sooner)
    assert all(notices[i][1].issued_at <= advisories[i].expected_at for i in advised if i in notices)
    drill = notices[out["mine"].instance_id][1]
    assert drill.drill and drill.cause == "drill"
    assert out["metadata"], "no metadata document was read"
    from agent.notice.messages import parse_metadata, parse_notice

    for iid, doc in out["metadata"]:
        assert doc["instance_id"] == iid
        parsed = parse_metadata(json.dumps(doc).encode(), 0.0)  # what the agent's 5 s poll reads
        nats_copy = parse_notice(next(d for c, s, d in out["arrivals"] if c == "notice" and s.endswith(iid)),
                                 "nats", 0.0)
        assert nats_copy.notice_id in {n.notice_id for n in parsed}  # the agent de-duplicates the two channels
        kinds = {item["kind"] for item in doc["notices"]}
        assert "notice" in kinds
        item = next(i for i in doc["notices"] if i["kind"] == "notice")
        assert datetime.fromisoformat(item["terminate_at"]) == notices[iid][1].terminate_at
    assert out["stream_messages"] == out["published"]["events"]
