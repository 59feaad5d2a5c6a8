"""Runtime rules: advisories, second notices, notices for other instances, the provider's deadline under
clock skew, and the release of leases and tokens."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agent.drain.credentials import NodeCredentials
from agent.drain.first_actions import PendingAction
from agent.drain.local import RecordingActuator
from agent.model import Unit
from agent.notice.file import notice_window as _notice_window
from agent.notice.messages import parse_notice
from agent.runtime import Agent
from tests.agent.fakes import FakeScheduler
from tests.agent.helpers import agent_config, make_bundle, new_keys, node_identity, notice_doc, workload_entry

NODE = node_identity()


def run(tmp_path: Path, docs: list[tuple[dict[str, object], str]], units: list[Unit],
        workloads: list[dict[str, Any]]) -> tuple[Agent, FakeScheduler, list[dict[str, Any]]]:
    keys = new_keys()
    cfg, ud, pub = agent_config(tmp_path, keys, NODE, make_bundle(keys, NODE.partition, 1, workloads))
    sched = FakeScheduler(units_on_node=units)

    async def go() -> Agent:
        agent = Agent(cfg, ud, pub, sched, RecordingActuator())
        await agent.start(connect=False)
        for doc, kind in docs:
            agent.on_notice(parse_notice(doc, "nats", agent.clock.monotonic(), default_kind=kind))
            await asyncio.sleep(0.05)
        await asyncio.wait_for(asyncio.gather(*agent.drains), 10)
        await agent.stop()
        return agent

    agent = asyncio.run(go())
    return agent, sched, [e.read() for e in agent.spool.head(1000)]


def test_an_advisory_is_recorded_and_drains_only_workloads_that_opted_in(tmp_path: Path) -> None:
    advisory = {"region": "r1", "instance_id": NODE.instance, "pool_id": "p", "issued_at": "2026-11-29T21:00:00Z",
                "expected_at": "2026-11-29T21:06:00Z", "probability": 0.6}
    agent, sched, events = run(tmp_path / "a", [(advisory, "advisory")], [Unit("1", "etl@1")],
                               [workload_entry("etl", budget=2)])
    assert not agent.drains and "unschedulable" not in sched.names()
    assert [e["kind"] for e in events] == ["advisory"] and events[0]["attributes"]["action"] == "recorded"
    agent, sched, events = run(tmp_path / "b", [(advisory, "advisory")], [Unit("1", "etl@1"), Unit("2", "ml@1")],
                               [workload_entry("etl", budget=2), workload_entry("ml", budget=2, advisory=True)])
    assert [a for w, _, a in sched.calls if w == "evict"] == ["2"]
    assert "advisory" in [e["kind"] for e in events]


def test_a_second_hard_notice_is_recorded_but_does_not_start_a_second_drain(tmp_path: Path) -> None:
    docs = [(notice_doc(NODE.instance, notice_id="n1"), "notice"),
            (notice_doc(NODE.instance, notice_id="n2"), "notice"),
            (notice_doc("i-someone-else", notice_id="n3"), "notice")]
    agent, sched, events = run(tmp_path, docs, [Unit("1", "etl@1")], [workload_entry("etl", budget=2)])
    assert len(agent.drains) == 1 and sched.names().count("unschedulable") == 1
    notices = [e for e in events if e["kind"] == "notice"]
    assert sorted(str(e["attributes"]["action"]) for e in notices) == ["already-draining", "drain"]
    assert agent.metrics.value("sco_agent_notices_refused_total", channel="nats", reason="other-instance") == 1


def test_the_notice_window_comes_from_the_providers_own_clock_and_a_skewed_deadline_is_ignored() -> None:
    issued = datetime(2020, 1, 1, tzinfo=UTC)  # a provider clock years behind ours
    with_issue = parse_notice({"instance_id": "i", "issued_at": issued.isoformat(),
                               "terminate_at": (issued + timedelta(seconds=120)).isoformat()}, "nats", 5.0)
    assert _notice_window(with_issue, datetime.now(UTC), 5.0) == 120.0
    only_deadline = parse_notice({"instance_id": "i", "notice_id": "x",
                                  "terminate_at": (issued + timedelta(seconds=120)).isoformat()}, "nats", 5.0)
    assert _notice_window(only_deadline, datetime.now(UTC), 5.0) is None
    soon = datetime.now(UTC) + timedelta(seconds=90)
    fresh = parse_notice({"instance_id": "i", "notice_id": "y", "terminate_at": soon.isoformat()}, "nats", 5.0)
    window = _notice_window(fresh, datetime.now(UTC), 5.5)
    assert window is not None and 89 < window < 91


def test_leases_are_released_and_tokens_removed_and_revoked(tmp_path: Path) -> None:
    posts: list[tuple[str, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            posts.append((self.path, self.headers.get("X-Vault-Token")))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    leases = tmp_path / "leases"
    leases.mkdir()
    (leases / "a.json").write_text(json.dumps({"lease_id": "a", "release_url": url + "/release/a"}))
    (leases / "b.json").write_text("{}")
    token = tmp_path / "token"
    token.write_text("s.node-token")
    try:
        creds = NodeCredentials(leases, (token, tmp_path / "absent"), url + "/v1/auth/token/revoke-self")
        assert creds.release_leases() == 2
        revoked = creds.revoke_tokens()
    finally:
        server.shutdown()
        server.server_close()
    assert not list(leases.iterdir()) and not token.exists()
    assert revoked == ["revoke-self", str(token)]
    assert ("/release/a", None) in posts and ("/v1/auth/token/revoke-self", "s.node-token") in posts


def test_a_drain_interrupted_by_an_agent_restart_is_resumed_with_its_original_deadline(tmp_path: Path) -> None:
    keys = new_keys()
    cfg, ud, pub = agent_config(tmp_path, keys, NODE, make_bundle(keys, NODE.partition, 1,
                                                                  [workload_entry("etl", budget=6)]))
    stuck = FakeScheduler(units_on_node=[Unit("1", "etl@1")], leave_on_evict=False, leave_on_finish=False)

    async def crash_mid_drain() -> None:
        agent = Agent(cfg, ud, pub, stuck, RecordingActuator())
        await agent.start(connect=False)
        agent.on_notice(parse_notice(notice_doc(NODE.instance, notice_id="n-9"), "nats", agent.clock.monotonic()))
        await asyncio.sleep(0.6)  # (the resumed drain's first action then comes >= 0.6 s after the notice)
        deadline = time.monotonic() + 30
        while not (cfg.state_dir / "notice.json").exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await agent.stop()  # the drain task dies with the process's event loop

    asyncio.run(crash_mid_drain())
    saved = json.loads((cfg.state_dir / "notice.json").read_text())
    assert saved["notice_id"] == "n-9" and saved["done"] is False

    fresh = FakeScheduler(units_on_node=[Unit("1", "etl@1")])

    async def restart() -> Agent:
        agent = Agent(cfg, ud, pub, fresh, RecordingActuator())
        await agent.start(connect=False)
        await asyncio.wait_for(asyncio.gather(*agent.drains), 10)
        await agent.stop()
        return agent

    agent = asyncio.run(restart())
    assert agent.metrics.value("sco_agent_notices_total", channel="resume", kind="notice") == 1
    report = agent.reports[0]
    assert report.notice_id == "n-9" and report.first_action_s is not None and report.first_action_s >= 0.6
    assert "unschedulable" in fresh.names() and report.workloads["etl@1"]["remaining"] == 0
    assert json.loads((cfg.state_dir / "notice.json").read_text())["done"] is True
    again = FakeScheduler()
    third = asyncio.run(_start_only(cfg, ud, pub, again))  # a drain that finished is not run again
    assert not third.drains and "unschedulable" not in again.names()


async def _start_only(cfg: Any, ud: Any, pub: bytes, sched: FakeScheduler) -> Agent:
    agent = Agent(cfg, ud, pub, sched, RecordingActuator())
    await agent.start(connect=False)
    await asyncio.sleep(0.1)
    await agent.stop()
    return agent


def test_the_kubernetes_local_path_starts_the_orderly_shutdown_once_and_cannot_count_pods(tmp_path: Path) -> None:
    import time

    from agent.drain.adapters import LocalPlan
    from agent.drain.local import KubeletShutdownActuator
    from agent.model import Contract

    marker = tmp_path / "shutdown-started"
    actuator = KubeletShutdownActuator(f"touch {marker}", inhibit_s=1)
    plan = LocalPlan(Contract.from_entry("web@1", workload_entry("web")), time.monotonic() + 5)
    actuator.start([plan], "kubernetes did not answer mark_unschedulable within 800 ms")
    actuator.start([plan], "again")
    deadline = time.monotonic() + 5
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists() and actuator.remaining() is None
    assert len(actuator.procs) <= 2  # the inhibitor (when systemd-inhibit exists) and one shutdown, not two
    for proc in actuator.procs:
        proc.kill()
        proc.wait()


class TwinScheduler(FakeScheduler):
    """A scheduler with an asyncio twin for the first action (as the Slurm adapter has): the calls go in ``log``."""

    def __init__(self, log: list[str], **kw: Any) -> None:
        super().__init__(**kw)
        self.log = log
        self.tasks_at_mark = -1

    async def amark_unschedulable(self, reason: str) -> None:
        self.tasks_at_mark = len(asyncio.all_tasks())
        self.log.append(f"unschedulable {self.name}")
        self.mark_unschedulable(reason)

    def units(self) -> list[Unit]:
        self.log.append(f"units {self.name}")
        return super().units()


def test_a_nats_notice_is_marked_unschedulable_inside_the_subscription_callback_before_any_task_or_event(
        tmp_path: Path) -> None:
    keys = new_keys()
    cfg, ud, pub = agent_config(tmp_path, keys, NODE, make_bundle(keys, NODE.partition, 1, [workload_entry("etl")]))
    sched = TwinScheduler([], units_on_node=[Unit("j1", "etl@1")])

    async def go() -> tuple[int, list[str], float, int, Agent]:
        agent = Agent(cfg, ud, pub, sched, RecordingActuator())
        await agent.start(connect=False)
        tasks = len(asyncio.all_tasks())
        await agent._receive(json.dumps(notice_doc(NODE.instance)).encode(), "notice")  # the callback's body
        marked = list(sched.log)
        counted = agent.metrics.value("sco_agent_notices_total", channel="nats", kind="notice")
        spooled = len(agent.spool.head(100))
        await asyncio.wait_for(asyncio.gather(*agent.drains), 10)
        await agent.stop()
        return tasks, marked, counted, spooled, agent

    tasks, marked, counted, spooled, agent = asyncio.run(go())
    assert sched.tasks_at_mark == tasks and marked == ["unschedulable fake"]  # in the callback's task, none made
    assert counted == 0 and spooled == 0  # the notice's counter and events come after the first action
    assert agent.metrics.value("sco_agent_notices_total", channel="nats", kind="notice") == 1
    assert [n for n in sched.names() if n != "ready"][:2] == ["unschedulable", "units"]
    assert agent.reports[0].path == "scheduler"
    events = [e.read() for e in agent.spool.head(1000)]
    assert any(e["kind"] == "notice" for e in events) and any(e["kind"] == "drained" for e in events)


def test_a_burst_to_many_agents_in_one_process_issues_every_first_action_before_any_drains_later_steps(
        tmp_path: Path) -> None:
    keys = new_keys()
    bundle = make_bundle(keys, "r1/slurm-batch", 1, [workload_entry("etl")])
    log: list[str] = []
    agents = []
    for k in range(20):
        node = node_identity(f"node{k}", f"i-node{k}")
        cfg, ud, pub = agent_config(tmp_path / f"a{k}", keys, node, bundle)
        agents.append(Agent(cfg, ud, pub, TwinScheduler(log, name=f"n{k}", units_on_node=[Unit(f"j{k}", "etl@1")]),
                            RecordingActuator()))

    async def go() -> None:
        for agent in agents:
            await agent.start(connect=False)
        for agent in agents:  # 5 ms apart: the drains begun first would run their later steps without the gate
            await agent._receive(json.dumps(notice_doc(agent.node.instance)).encode(), "notice")
            await asyncio.sleep(0.005)
        await asyncio.wait_for(asyncio.gather(*(d for a in agents for d in a.drains)), 20)
        for agent in agents:
            await agent.stop()

    asyncio.run(go())
    firsts = [i for i, entry in enumerate(log) if entry.startswith("unschedulable")]
    later = [i for i, entry in enumerate(log) if entry.startswith("units")]
    assert len(firsts) == 20 and len(later) >= 20 and max(firsts) < min(later)


def test_a_nats_notice_drains_with_the_bundle_held_at_the_notice_when_a_newer_one_lands_before_its_later_steps(
        tmp_path: Path) -> None:
    keys = new_keys()
    cfg, ud, pub = agent_config(tmp_path, keys, NODE, make_bundle(keys, NODE.partition, 1, [workload_entry("etl")]))
    sched = TwinScheduler([], units_on_node=[Unit("j1", "etl@1"), Unit("j2", "ml@1")])
    newer = make_bundle(keys, NODE.partition, 2, [workload_entry("ml")])

    async def go() -> tuple[int, list[str], Agent]:
        agent = Agent(cfg, ud, pub, sched, RecordingActuator())
        await agent.start(connect=False)
        other = PendingAction()  # another agent's first action is pending: this drain's later steps wait for it
        await agent._receive(json.dumps(notice_doc(NODE.instance)).encode(), "notice")
        assert agent.bundles.offer(*newer, "distributor").outcome == "accepted"
        await asyncio.get_running_loop().run_in_executor(agent._writer, lambda: None)  # what was spooled so far
        spooled, called = len(agent.spool.head(100)), list(sched.log)
        other.done()
        await asyncio.wait_for(asyncio.gather(*agent.drains), 10)
        await agent.stop()
        return spooled, called, agent

    spooled, called, agent = asyncio.run(go())
    assert spooled == 0 and called == ["unschedulable fake"]  # only the first action before the gate opened
    assert "etl@1" in agent.reports[0].workloads and "ml@1" not in agent.reports[0].workloads  # generation 1's
    events = [e.read() for e in agent.spool.head(1000)]  # the deferred steps all reached the spool
    notice = [e for e in events if e["kind"] == "notice"]
    assert len(notice) == 1 and notice[0]["attributes"]["bundle_generation"] == 1
    steps = [e["attributes"].get("step") for e in events if e["kind"] == "drain-started"]
    assert steps[0] == "unschedulable" and "etl" in [e["workload"] for e in events if e["kind"] == "drained"]
