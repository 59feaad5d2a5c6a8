"""The agent builds events as plain dicts; the shared pydantic model must accept every one of them."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

from agent.drain.credentials import NodeCredentials
from agent.drain.local import RecordingActuator
from agent.events import EVENT_FIELDS, make_event
from agent.model import Unit
from agent.runtime import Agent
from contracts.events import Event
from contracts.subjects import EventKind
from tests.agent.fakes import FakeScheduler
from tests.agent.helpers import agent_config, make_bundle, new_keys, node_identity, notice_doc, workload_entry


def test_an_agent_event_dict_has_exactly_the_fields_of_the_shared_event_model() -> None:
    event = make_event(EventKind.NOTICE, now=datetime.now(UTC), node=node_identity(), cause="reclaim",
                       workload="etl", contract_version="1", attributes={"n": 1, "ok": True, "x": None})
    assert tuple(sorted(event)) == tuple(sorted(EVENT_FIELDS)) == tuple(sorted(Event.model_fields))
    parsed = Event.model_validate(event)
    assert parsed.source == "agent" and parsed.kind is EventKind.NOTICE
    assert str(parsed.event_id) == event["event_id"]
    assert Event.model_validate_json(json.dumps(event)).time.tzinfo is not None


def test_every_event_a_drain_writes_to_the_spool_validates_with_the_shared_model(tmp_path: Path) -> None:
    keys = new_keys()
    node = node_identity()
    bundle = make_bundle(keys, node.partition, 1, [workload_entry("etl", budget=2), workload_entry("sim", budget=3)])
    cfg, ud, pub = agent_config(tmp_path, keys, node, bundle)
    sched = FakeScheduler(units_on_node=[Unit("1", "etl@1"), Unit("2", "sim@1"), Unit("3", None)])

    async def run() -> list[dict[str, object]]:
        token = tmp_path / "token"
        token.write_text("secret")
        agent = Agent(cfg, ud, pub, sched, RecordingActuator(), NodeCredentials(token_files=(token,)))
        await agent.start(connect=False)
        from agent.notice.messages import parse_notice

        agent.on_notice(parse_notice(notice_doc(node.instance), "nats", agent.clock.monotonic()))
        await asyncio.wait_for(asyncio.gather(*agent.drains), 10)
        await agent.stop()
        return [json.loads(p.read_bytes()) for p in sorted((cfg.state_dir / "spool").glob("*.json"))]

    events = asyncio.run(run())
    kinds = {e["kind"] for e in events}
    assert {"notice", "drain-started", "drained", "credentials-revoked"} <= kinds
    assert not (tmp_path / "token").exists()
    for event in events:
        model = Event.model_validate(event)
        assert model.source == "agent" and model.instance == node.instance and model.region == node.region
    drained = [e for e in events if e["kind"] == "drained"]
    assert {(e["workload"], e["contract_version"]) for e in drained} == {("etl", "1"), ("sim", "1"),
                                                                          ("uncontracted", "0")}
