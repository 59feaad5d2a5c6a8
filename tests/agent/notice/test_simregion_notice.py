"""The agent against the simulated region's real notice path: the notice published on NATS by the
region service and the same notice in its metadata endpoint (``GET /metadata/{id}``)."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from pathlib import Path

from agent.drain.local import RecordingActuator
from agent.model import Unit
from agent.runtime import Agent
from contracts.provider import LaunchRequest, OwnerTags
from testkit.nats import NatsProcess
from tests.agent.fakes import FakeScheduler
from tests.agent.helpers import (
    agent_config,
    make_bundle,
    new_keys,
    node_identity,
    stream_events,
    wait_for,
    workload_entry,
)
from tests.controllers.simregion.helpers import make_region

# How long a wait for the subscriptions, the drain, a counter or the spool's flush may take before what follows
# fails: generous, each is left as soon as it holds (a loaded machine only makes them late). The wall-clock bound
# of the metadata-only test is asserted on its own.
WAIT_S = 60.0


def run_against_region(tmp_path: Path, nats_url: str | None, metadata: bool) -> tuple[Agent, FakeScheduler]:
    from controllers.simregion.service import RegionService

    region, clock = make_region(pools=15, seed=11)
    service = RegionService(region, nats_url=nats_url)
    pool = next(p.pool_id for p in region.catalogue().pools if p.purchase_model == "reclaimable")
    (mine,) = region.launch(LaunchRequest(pool_id=pool, count=1, owner=OwnerTags(
        workload="etl", pool=pool, partition="r1/slurm-batch", generation=1)))
    keys = new_keys()
    node = node_identity(instance=mine.instance_id)
    sched = FakeScheduler(units_on_node=[Unit("7", "etl@1")])

    async def run() -> Agent:
        await service.start()
        cfg, ud, pub = agent_config(tmp_path, keys, node,
                                    make_bundle(keys, node.partition, 1, [workload_entry("etl", budget=2)]),
                                    nats_url=nats_url,
                                    metadata_url=f"{service.url}/metadata/{mine.instance_id}" if metadata else None,
                                    metadata_poll_s=0.3)
        agent = Agent(cfg, ud, pub, sched, RecordingActuator())
        await agent.start()
        if nats_url:
            assert await wait_for(lambda: agent._subs, WAIT_S)
        clock.advance(timedelta(seconds=10))
        region.reclaim((mine.instance_id,))
        await service.step()
        await wait_for(lambda: agent.drains, WAIT_S)
        await asyncio.wait_for(asyncio.gather(*agent.drains), WAIT_S)
        if nats_url and metadata:
            await wait_for(lambda: agent.metrics.value("sco_agent_notices_duplicate_total", channel="metadata",
                                                       kind="notice"), WAIT_S)
        if nats_url:
            assert await agent.flush_events(timeout=WAIT_S)
        await agent.stop()
        await service.stop()
        return agent

    return asyncio.run(run()), sched


def test_the_regions_nats_notice_drains_the_node_and_its_metadata_copy_is_ignored(
        tmp_path: Path, events_nats: NatsProcess) -> None:
    agent, sched = run_against_region(tmp_path, events_nats.url, metadata=True)
    assert agent.metrics.value("sco_agent_notices_total", channel="nats", kind="notice") == 1
    assert agent.metrics.value("sco_agent_notices_duplicate_total", channel="metadata", kind="notice") >= 1
    assert sched.names()[:2] == ["ready", "unschedulable"] and agent.reports[0].workloads["etl@1"]["remaining"] == 0
    events = asyncio.run(stream_events(events_nats.url))
    notice = [e for e in events if e["source"] == "agent" and e["kind"] == "notice"]
    assert notice and notice[0]["attributes"]["terminate_at"]  # the region's deadline travelled
    assert notice[0]["instance"] == agent.node.instance


def test_with_no_relay_the_regions_metadata_endpoint_alone_delivers_the_notice(tmp_path: Path) -> None:
    started = time.monotonic()
    agent, _ = run_against_region(tmp_path, None, metadata=True)
    assert agent.metrics.value("sco_agent_notices_total", channel="metadata", kind="notice") == 1
    assert agent.reports[0].path == "scheduler" and time.monotonic() - started < 15
