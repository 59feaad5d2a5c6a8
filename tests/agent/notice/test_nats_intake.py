"""Notice intake over real NATS and the metadata poll; event shipping to JetStream through the spool."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nats
import pytest

from agent.drain.local import RecordingActuator
from agent.model import Unit
from agent.runtime import Agent
from contracts.bundle_wire import AGENT_BUNDLE
from contracts.events import Event
from contracts.subjects import notice_subject
from testkit.jsonserver import JsonServer
from testkit.nats import NatsProcess
from tests.agent.fakes import FakeScheduler
from tests.agent.helpers import (
    agent_config,
    ensure_stream,
    make_bundle,
    new_keys,
    node_identity,
    notice_doc,
    stream_events,
    wait_for,
    workload_entry,
)
from tests.support.ports import free_port

NODE = node_identity()
WORKLOADS = [workload_entry("etl", budget=2), workload_entry("sim", budget=3)]
# How long a wait for a subscription, a drain, a counter or the spool's flush may take before the assert after it
# fails: generous, each is left as soon as its condition holds, and a loaded machine only makes them late. The
# latency promises (the first action within 2 s, the metadata poll within 5 s) are asserted on their own.
WAIT_S = 60.0


def units() -> list[Unit]:
    return [Unit("11", "etl@1"), Unit("12", "sim@1")]


async def publish_notice(url: str, doc: dict[str, Any]) -> None:
    nc = await nats.connect(url)
    await nc.publish(notice_subject(NODE.region, NODE.instance), json.dumps(doc).encode())
    await nc.flush()
    await nc.close()


def test_a_notice_on_the_instance_subject_drains_the_node_and_every_step_reaches_jetstream(
        tmp_path: Path, events_nats: NatsProcess) -> None:
    keys = new_keys()
    cfg, ud, pub = agent_config(tmp_path, keys, NODE, make_bundle(keys, NODE.partition, 1, WORKLOADS),
                                nats_url=events_nats.url)
    sched = FakeScheduler(units_on_node=units())

    async def run() -> tuple[Agent, list[dict[str, Any]], float]:
        agent = Agent(cfg, ud, pub, sched, RecordingActuator())
        await agent.start()
        assert await wait_for(lambda: agent._subs, WAIT_S)
        sent = time.monotonic()
        await publish_notice(events_nats.url, notice_doc(NODE.instance))
        await wait_for(lambda: agent.drains, WAIT_S)
        await asyncio.wait_for(asyncio.gather(*agent.drains), WAIT_S)
        assert await agent.flush_events(timeout=WAIT_S)
        events = await stream_events(events_nats.url)
        await agent.stop()
        return agent, events, sent

    agent, events, sent = asyncio.run(run())
    first = next(t for what, t, _ in sched.calls if what == "unschedulable")
    assert first - sent < 2.0
    kinds = [str(Event.model_validate(e).kind) for e in events]
    assert "notice" in kinds and kinds[-1] == "drained"
    assert kinds.count("drained") == 2 and "credentials-revoked" not in kinds  # no credentials configured
    assert len({e["event_id"] for e in events}) == len(events)
    assert agent.metrics.value("sco_agent_notices_total", channel="nats", kind="notice") == 1
    assert agent.spool.depth == 0 and agent.metrics.value("sco_agent_events_shipped_total") == len(events)


@pytest.mark.services
def test_with_nats_stopped_the_metadata_poll_catches_the_notice_within_5_s_and_events_wait_in_the_spool(
        tmp_path: Path) -> None:
    keys = new_keys()
    nats_srv = NatsProcess(tmp_path / "nats")  # not started: the relay is down
    meta = JsonServer()
    meta.set_json("/meta", {"instance_id": NODE.instance, "notices": []})
    cfg, ud, pub = agent_config(tmp_path, keys, NODE, make_bundle(keys, NODE.partition, 1, WORKLOADS),
                                nats_url=nats_srv.url, metadata_url=meta.url + "/meta",
                                metadata_poll_s=1.0)  # 1 s polls: 4.5 s of slack below the 5 s promise under load
    sched = FakeScheduler(units_on_node=units())

    async def run() -> tuple[float, Agent, list[dict[str, Any]], int]:
        agent = Agent(cfg, ud, pub, sched, RecordingActuator())
        await agent.start()
        assert await wait_for(lambda: meta.hits, WAIT_S)  # the first poll has happened: it saw no notice
        published = time.monotonic()
        meta.set_json("/meta", {"instance_id": NODE.instance, "notices": [notice_doc(NODE.instance)]})
        await wait_for(lambda: agent.drains, 30)
        caught = time.monotonic() - published
        await asyncio.wait_for(asyncio.gather(*agent.drains), WAIT_S)
        await asyncio.get_running_loop().run_in_executor(agent._writer, lambda: None)  # every event on disk
        spooled = agent.spool.depth
        nats_srv.start()  # the relay comes back: the spool drains into JetStream
        await ensure_stream(nats_srv.url)
        assert await agent.flush_events(timeout=WAIT_S)
        events = await stream_events(nats_srv.url)
        await agent.stop()
        return caught, agent, events, spooled

    try:
        caught, agent, events, spooled = asyncio.run(run())
    finally:
        meta.stop()
        nats_srv.stop()
    assert caught <= 5.5
    assert agent.metrics.value("sco_agent_notices_total", channel="metadata", kind="notice") == 1
    assert spooled >= 5 and len(events) == spooled
    assert [e["kind"] for e in events].count("drained") == 2


def test_the_first_channel_wins_and_the_copy_on_the_other_channel_is_ignored(
        tmp_path: Path, events_nats: NatsProcess) -> None:
    keys = new_keys()
    doc = notice_doc(NODE.instance)
    meta = JsonServer()
    meta.set_json("/meta", {"instance_id": NODE.instance, "notices": []})
    cfg, ud, pub = agent_config(tmp_path, keys, NODE, make_bundle(keys, NODE.partition, 1, WORKLOADS),
                                nats_url=events_nats.url, metadata_url=meta.url + "/meta", metadata_poll_s=0.2)
    sched = FakeScheduler(units_on_node=units())

    async def run() -> Agent:
        agent = Agent(cfg, ud, pub, sched, RecordingActuator())
        await agent.start()
        assert await wait_for(lambda: agent._subs, WAIT_S)
        await publish_notice(events_nats.url, doc)
        await wait_for(lambda: agent.drains, WAIT_S)
        meta.set_json("/meta", {"instance_id": NODE.instance, "notices": [doc]})
        await wait_for(lambda: agent.metrics.value("sco_agent_notices_duplicate_total", channel="metadata",
                                                   kind="notice"), WAIT_S)
        await publish_notice(events_nats.url, doc)  # a redelivery on the stream is ignored too
        await wait_for(lambda: agent.metrics.value("sco_agent_notices_duplicate_total", channel="nats",
                                                   kind="notice"), WAIT_S)
        await asyncio.wait_for(asyncio.gather(*agent.drains), WAIT_S)
        await agent.stop()
        return agent

    try:
        agent = asyncio.run(run())
    finally:
        meta.stop()
    assert len(agent.drains) == 1 and sched.names().count("unschedulable") == 1
    assert agent.metrics.value("sco_agent_notices_total", channel="nats", kind="notice") == 1
    assert agent.metrics.value("sco_agent_notices_duplicate_total", channel="metadata", kind="notice") >= 1
    assert agent.metrics.value("sco_agent_notices_duplicate_total", channel="nats", kind="notice") == 1


def test_events_spooled_before_an_agent_restart_are_shipped_once_by_the_next_agent(
        tmp_path: Path, events_nats: NatsProcess) -> None:
    keys = new_keys()
    bundle = make_bundle(keys, NODE.partition, 1, WORKLOADS)
    down = f"nats://127.0.0.1:{free_port()}"
    cfg, ud, pub = agent_config(tmp_path, keys, NODE, bundle, nats_url=down)
    cfg2, ud2, _ = agent_config(tmp_path, keys, NODE, bundle, nats_url=events_nats.url)

    async def run() -> tuple[int, list[dict[str, Any]]]:
        first = Agent(cfg, ud, pub, FakeScheduler(units_on_node=units()), RecordingActuator())
        await first.start()
        from agent.notice.messages import parse_notice

        first.on_notice(parse_notice(notice_doc(NODE.instance), "nats", time.monotonic()))
        await asyncio.wait_for(asyncio.gather(*first.drains), WAIT_S)
        await first.stop()  # the process ends with the events still on disk
        spooled = len(list((cfg.state_dir / "spool").glob("*.json")))
        second = Agent(cfg2, ud2, pub, FakeScheduler(), RecordingActuator())
        await second.start()
        assert await second.flush_events(timeout=WAIT_S)
        await second.stop()
        return spooled, await stream_events(events_nats.url)

    spooled, events = asyncio.run(run())
    assert spooled >= 5 and len(events) == spooled
    assert len({e["event_id"] for e in events}) == spooled
    assert "drained" in {e["kind"] for e in events}


def test_with_the_control_plane_and_distributor_stopped_the_drain_is_identical(
        tmp_path: Path, events_nats: NatsProcess) -> None:
    keys = new_keys()
    bundle = make_bundle(keys, NODE.partition, 1, WORKLOADS)

    def scenario(name: str, distributor_url: str, attempted: Callable[[Agent], bool],
                 ) -> tuple[list[tuple[str, str]], list[tuple[Any, ...]], str]:
        cfg, ud, pub = agent_config(tmp_path / name, keys, NODE, bundle, nats_url=events_nats.url,
                                    distributor_url=distributor_url, refresh_s=0.2)
        sched = FakeScheduler(units_on_node=units())

        async def run() -> tuple[list[dict[str, Any]], str]:
            agent = Agent(cfg, ud, pub, sched, RecordingActuator())
            await agent.start()
            assert await wait_for(lambda: agent._subs, WAIT_S)
            # several refresh attempts against the distributor: counted, not assumed after a sleep (a loaded
            # machine runs the 0.2 s refresh loop late)
            assert await wait_for(lambda: attempted(agent), WAIT_S)
            await publish_notice(events_nats.url, notice_doc(NODE.instance, notice_id=f"n-{name}"))
            await wait_for(lambda: agent.drains, WAIT_S)
            await asyncio.wait_for(asyncio.gather(*agent.drains), WAIT_S)
            failures = agent.metrics.value("sco_agent_bundle_refresh_failures_total")
            assert await agent.flush_events(timeout=WAIT_S)
            await agent.stop()
            shipped = [e for e in await stream_events(events_nats.url)
                       if e["attributes"].get("notice_id") == f"n-{name}"]
            return shipped, f"{failures:g}"

        spooled, failures = asyncio.run(run())
        calls = [(what, arg if what != "unschedulable" else "") for what, _, arg in sched.calls]
        steps = [(e["kind"], e["workload"], e["attributes"].get("step"), e["attributes"].get("remaining"))
                 for e in spooled if e["kind"] not in ("bundle-refused",)]
        return calls, sorted(steps, key=str), failures

    dist = JsonServer()
    dist.serve_bundle("/p/", *bundle)
    try:
        up_calls, up_steps, up_failures = scenario(
            "up", dist.url + "/p/", lambda _: sum(hit.endswith(AGENT_BUNDLE) for hit in dist.hits) >= 2)
    finally:
        dist.stop()
    down_calls, down_steps, down_failures = scenario(
        "down", f"http://127.0.0.1:{free_port()}/p/",
        lambda agent: agent.metrics.value("sco_agent_bundle_refresh_failures_total") >= 2)
    assert up_failures == "0" and float(down_failures) >= 2
    assert sorted(up_calls) == sorted(down_calls)
    assert up_steps == down_steps


def test_an_event_shipped_just_before_a_crash_is_not_duplicated_when_the_spool_ships_it_again(
        tmp_path: Path, events_nats: NatsProcess) -> None:
    from agent.events import make_event, subject_of
    from agent.spool import Spool
    from contracts.subjects import EventKind

    spool = Spool(tmp_path / "state" / "spool")
    events = [make_event(EventKind.DRAINED, now=datetime.now(UTC), node=NODE, cause="reclaim",
                         attributes={"n": i}) for i in range(3)]
    for event in events:
        spool.append(event)

    async def run() -> list[dict[str, Any]]:
        nc = await nats.connect(events_nats.url)  # the previous process got the ack, then died
        await nc.jetstream().publish(subject_of(events[0]), json.dumps(events[0]).encode(),
                                     headers={"Nats-Msg-Id": events[0]["event_id"]})
        await nc.close()
        keys = new_keys()
        cfg, ud, pub = agent_config(tmp_path, keys, NODE, make_bundle(keys, NODE.partition, 1, WORKLOADS),
                                    nats_url=events_nats.url)
        agent = Agent(cfg, ud, pub, FakeScheduler(), RecordingActuator())
        await agent.start()
        assert await agent.flush_events(timeout=WAIT_S)
        await agent.stop()
        return await stream_events(events_nats.url)

    shipped = asyncio.run(run())
    assert sorted(e["event_id"] for e in shipped) == sorted(e["event_id"] for e in events)


@pytest.mark.services
def test_a_relay_that_goes_away_mid_life_loses_no_event_and_notices_flow_again_after_it_returns(
        tmp_path: Path) -> None:
    keys = new_keys()
    relay = NatsProcess(tmp_path / "relay")
    relay.start()
    asyncio.run(ensure_stream(relay.url))
    meta = JsonServer()
    meta.set_json("/meta", {"instance_id": NODE.instance, "notices": []})
    cfg, ud, pub = agent_config(tmp_path, keys, NODE, make_bundle(keys, NODE.partition, 1, WORKLOADS),
                                nats_url=relay.url, metadata_url=meta.url + "/meta", metadata_poll_s=0.2)
    sched = FakeScheduler(units_on_node=units())

    async def run() -> tuple[int, list[dict[str, Any]], float]:
        agent = Agent(cfg, ud, pub, sched, RecordingActuator())
        await agent.start()
        assert await wait_for(lambda: agent.metrics.value("sco_agent_nats_connected"), WAIT_S)
        relay.stop()  # the relay dies while the agent runs
        await wait_for(lambda: not agent.metrics.value("sco_agent_nats_connected"), WAIT_S)
        meta.set_json("/meta", {"instance_id": NODE.instance, "notices": [notice_doc(NODE.instance)]})
        await wait_for(lambda: agent.drains, WAIT_S)
        await asyncio.wait_for(asyncio.gather(*agent.drains), WAIT_S)
        # every event the drain emitted is on disk: the spool writer has nothing queued (not a sleep: load)
        await asyncio.get_running_loop().run_in_executor(agent._writer, lambda: None)
        spooled = agent.spool.depth
        relay.start()  # same port, same JetStream store
        assert await agent.flush_events(timeout=WAIT_S)
        events = await stream_events(relay.url)
        advisory = {"region": "r1", "instance_id": NODE.instance, "pool_id": "p",
                    "issued_at": datetime.now(UTC).isoformat(), "expected_at": datetime.now(UTC).isoformat(),
                    "probability": 0.5}
        nc = await nats.connect(relay.url)
        from contracts.subjects import advisory_subject

        await nc.publish(advisory_subject(NODE.region, NODE.instance), json.dumps(advisory).encode())
        await nc.flush()
        await nc.close()
        got = await wait_for(lambda: agent.metrics.value("sco_agent_notices_total", channel="nats",
                                                         kind="advisory"), WAIT_S)
        await agent.stop()
        return spooled, events, got

    try:
        spooled, events, advisory_seen = asyncio.run(run())
    finally:
        meta.stop()
        relay.stop()
    assert spooled >= 5 and len(events) == spooled and "drained" in {e["kind"] for e in events}
    assert advisory_seen == 1  # the subscriptions came back with the connection


@pytest.mark.services
def test_the_relay_token_from_the_user_data_files_is_presented_and_without_it_the_relay_refuses(
        tmp_path: Path) -> None:
    relay = NatsProcess(tmp_path / "relay", token="per-instance-secret")
    relay.start()
    keys = new_keys()
    (tmp_path / "nats.token").write_text("per-instance-secret\n")
    bundle = make_bundle(keys, NODE.partition, 1, WORKLOADS)
    with_token, ud, pub = agent_config(tmp_path / "a", keys, NODE, bundle, nats_url=relay.url,
                                       nats_token_file=tmp_path / "nats.token")
    without, ud2, _ = agent_config(tmp_path / "b", keys, NODE, bundle, nats_url=relay.url)
    sched = FakeScheduler(units_on_node=units())

    async def run() -> tuple[float, float, int]:
        good = Agent(with_token, ud, pub, sched, RecordingActuator())
        bad = Agent(without, ud2, pub, FakeScheduler(), RecordingActuator())
        await good.start()
        await bad.start()
        assert await wait_for(lambda: good.metrics.value("sco_agent_nats_connected"), WAIT_S)
        nc = await nats.connect(relay.url, token="per-instance-secret")
        await nc.publish(notice_subject(NODE.region, NODE.instance), json.dumps(notice_doc(NODE.instance)).encode())
        await nc.flush()
        await nc.close()
        await wait_for(lambda: good.drains, WAIT_S)
        await asyncio.wait_for(asyncio.gather(*good.drains), WAIT_S)
        refused = bad.metrics.value("sco_agent_nats_connected")
        connected = good.metrics.value("sco_agent_nats_connected")
        await good.stop()
        await bad.stop()
        return connected, refused, len(bad.drains)

    try:
        connected, refused, bad_drains = asyncio.run(run())
    finally:
        relay.stop()
    assert connected == 1 and refused == 0 and bad_drains == 0
    assert "unschedulable" in sched.names()


@pytest.mark.services
def test_a_notice_published_before_the_agent_could_subscribe_is_read_from_the_metadata_endpoint_on_subscribing(
        tmp_path: Path) -> None:
    from sco.stack import credentials

    keys = new_keys()
    relay = NatsProcess(tmp_path / "relay")  # authenticating; the agent's credential is not minted yet
    relay.start()
    minted = credentials.agent_user(NODE.region, NODE.instance, "minted-later")
    meta = JsonServer()
    meta.set_json("/meta", {"instance_id": NODE.instance, "notices": []})
    # the next scheduled poll is an hour away: only the read when the subscriptions land can catch the notice
    cfg, ud, pub = agent_config(tmp_path, keys, NODE, make_bundle(keys, NODE.partition, 1, WORKLOADS),
                                nats_url=credentials.nats_url(minted.name, minted.password, relay.port),
                                metadata_url=meta.url + "/meta", metadata_poll_s=3600.0)
    sched = FakeScheduler(units_on_node=units())

    async def run() -> Agent:
        agent = Agent(cfg, ud, pub, sched, RecordingActuator())
        await agent.start()
        assert await wait_for(lambda: meta.hits, WAIT_S)  # the first read, before the notice
        doc = notice_doc(NODE.instance)
        meta.set_json("/meta", {"instance_id": NODE.instance, "notices": [doc]})
        await publish_notice(relay.url, doc)  # core NATS: no subscriber yet (refused), so no one keeps it
        assert not agent._subs and not agent.drains
        relay.add_users([minted])  # minted: the agent's next connection attempt is accepted and subscribes
        await wait_for(lambda: agent.drains, WAIT_S)
        await asyncio.wait_for(asyncio.gather(*agent.drains), WAIT_S)
        await agent.stop()
        return agent

    try:
        agent = asyncio.run(run())
    finally:
        meta.stop()
        relay.stop()
    assert len(agent.drains) == 1 and "unschedulable" in sched.names()
    assert agent.metrics.value("sco_agent_notices_total", channel="metadata", kind="notice") == 1
    assert len(meta.hits) == 2  # the first read and the read on subscribing: no scheduled poll came between
