"""Notices to real agents across a NATS cluster while one member is SIGKILLed.

``run_notices`` starts one full ``agent.runtime.Agent`` per simulated node in this process (the harness of
``bench/agent_notice_latency.py``: in-memory scheduler, spool, event shipping to JetStream), each logged in as
its own instance's NATS user (``sco.stack.credentials.agent_user``) with every member's URL in its user-data, so
the agents spread over the members as nats-py shuffles the list. The region's relay user then publishes one
provider notice per instance subject, a quarter of the burst at a time; with ``kill`` the member holding the
most agents is SIGKILLed after the first quarter, while the rest is still being published (the relay
connected to that member or to another one).

Core NATS keeps no message for a subscriber that is reconnecting, so a relay that publishes each notice once
loses the ones sent to an agent between its server's death and its resubscription elsewhere. The relay here
does what the provider contract lets it do (the notice stands until its deadline, the agent coalesces copies):
it publishes every notice again every ``repeat_s`` until every node has taken its notice in (the test stops
then; a production relay would stop at each notice's ``terminate_at``). Latency is measured from the first
publish of each notice: publish → agent intake, and publish → first drain action.
"""

from __future__ import annotations

import asyncio
import gc
import json
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.config import AgentConfig, parse_userdata, userdata_document
from agent.model import NodeIdentity
from agent.runtime import Agent
from bench.agent_notice_latency import MemoryScheduler, NullActuator, notice, pct, signed_bundle
from contracts.subjects import notice_subject
from sco.stack import credentials
from sco.stack.credentials import NatsUser
from stores import nats as sco_nats
from testkit.nats import NatsCluster, NatsProcess

__all__ = ["REGION", "NoticeRun", "notice_users", "run_notices"]

REGION = "r1"
PARTITION = "r1/bench"


def notice_users(instances: list[str], password: str) -> list[NatsUser]:
    """The region's relay user and one agent user per instance (all with ``password``: a test's servers)."""
    pub, sub = credentials.NATS_PERMISSIONS["region"] or ([], [])
    return [NatsUser("region", password, tuple(pub), tuple(sub)),
            *(credentials.agent_user(REGION, i, password) for i in instances)]


@dataclass
class NoticeRun:
    """One burst: who took the notice in and acted, when, and what the kill did."""

    nodes: int
    intake: list[float] = field(default_factory=list)  # first publish -> agent intake, per node that took it in
    acted: list[float] = field(default_factory=list)  # first publish -> first drain action
    rounds: int = 0  # times the whole burst was published (1: no copy was needed)
    after_first_round: int = 0  # nodes whose intake came after the second round began (needed a copy)
    killed: str | None = None  # the member SIGKILLed (its port)
    on_killed: int = 0  # agents connected to it when it was killed
    reconnected: int = 0  # of those, connected to another member at the end
    spread: dict[int, int] = field(default_factory=dict)  # port -> agents connected, before the kill
    publish_s: float = 0.0
    relay_on_killed: bool = False  # the relay's own connection was to the killed member

    def p99_ms(self, what: str = "intake") -> float:
        values = self.intake if what == "intake" else self.acted
        return pct(values, 0.99) * 1000 if values else float("nan")

    def lines(self, label: str) -> list[str]:
        out = [f"-- {label}: {self.nodes} nodes, agents per member {dict(sorted(self.spread.items()))}",
               f"took the notice in: {len(self.intake)} of {self.nodes}; acted: {len(self.acted)}; burst "
               f"published in {self.publish_s * 1000:.0f} ms, {self.rounds} round(s) in all, "
               f"{self.after_first_round} node(s) served by a repeat"]
        if self.killed:
            out.append(f"killed member :{self.killed} holding {self.on_killed} agents"
                       f"{' and the relay' if self.relay_on_killed else ''}; {self.reconnected} of them connected "
                       f"to another member at the end")
        if self.intake:
            out.append(f"publish -> intake p50 {pct(self.intake, 0.5) * 1000:.1f} ms, p99 {self.p99_ms():.1f} ms, "
                       f"max {max(self.intake) * 1000:.1f} ms")
        if self.acted:
            out.append(f"publish -> first action p50 {pct(self.acted, 0.5) * 1000:.1f} ms, p99 "
                       f"{self.p99_ms('acted'):.1f} ms, max {max(self.acted) * 1000:.1f} ms")
        return out


def _members(server: NatsCluster | NatsProcess) -> list[NatsProcess]:
    return server.members if isinstance(server, NatsCluster) else [server]


def _agents(server: NatsCluster | NatsProcess, instances: list[str], root: Path, password: str,
            first: dict[str, float], writer: ThreadPoolExecutor) -> list[Agent]:
    raw, sig, pub = signed_bundle()
    urls = [m.bare_url for m in _members(server)]
    agents = []
    for instance in instances:
        node = NodeIdentity(REGION, PARTITION, instance, f"node-{instance}", "p", "slurm")
        ud = parse_userdata(json.dumps(userdata_document(node, raw, sig, urls)).encode())
        state = root / instance
        state.mkdir(parents=True, exist_ok=True)
        secret = state / "nats.password"
        secret.write_text(password)
        cfg = AgentConfig(state_dir=state, metrics_port=0, nats_password_file=secret)
        agents.append(Agent(cfg, ud, pub, MemoryScheduler(first, instance), NullActuator(), writer=writer))
    return agents


async def _start(agents: list[Agent], timeout_s: float) -> None:
    for k in range(0, len(agents), 50):  # 50 at a time, each batch subscribed before the next connects
        batch = agents[k:k + 50]
        await asyncio.gather(*(a.start() for a in batch))
        end = time.monotonic() + timeout_s
        while not all(a._subs for a in batch) and time.monotonic() < end:
            await asyncio.sleep(0.02)


def _port(agent: Agent) -> int | None:
    nc = agent.nc
    if nc is None or not nc.is_connected or nc.connected_url is None:
        return None
    return int(nc.connected_url.port)


def _busiest(agents: list[Agent]) -> tuple[int, int]:
    """The port of the member holding the most agents, and how many."""
    return Counter(p for p in map(_port, agents) if p is not None).most_common(1)[0]


async def _burst(relay: Any, instances: list[str], run: NoticeRun, server: NatsCluster | NatsProcess,
                 agents: list[Agent], kill: int | None) -> tuple[dict[str, float], dict[str, bytes], list[Agent]]:
    """Publish the burst a quarter at a time; SIGKILL member port ``kill`` after the first quarter."""
    docs = {i: notice(i) for i in instances}
    sent: dict[str, float] = {}
    on_killed: list[Agent] = []
    quarter = max(1, len(instances) // 4)
    started = time.monotonic()
    for k in range(0, len(instances), quarter):
        for instance in instances[k:k + quarter]:
            sent[instance] = time.monotonic()
            await relay.publish(notice_subject(REGION, instance), docs[instance])
        if kill is not None and k == 0:
            on_killed = [a for a in agents if _port(a) == kill]
            run.relay_on_killed = relay.connected_url is not None and relay.connected_url.port == kill
            next(m for m in _members(server) if m.port == kill).kill()
            run.killed, run.on_killed = str(kill), len(on_killed)
    run.publish_s = time.monotonic() - started
    return sent, docs, on_killed


async def _repeat(relay: Any, agents: list[Agent], docs: dict[str, bytes], first: dict[str, float],
                  run: NoticeRun, repeat_s: float, deadline_s: float) -> float:
    """Every ``repeat_s``, publish every notice again until every node took its notice in and acted (the
    relay flushes in the background: a flush to a dead server waits for its timeout, the repeats do not)."""
    flushing = asyncio.create_task(relay.flush(timeout=2))
    end = time.monotonic() + deadline_s
    run.rounds = 1
    second_round = float("inf")
    next_round = time.monotonic() + repeat_s
    while time.monotonic() < end:
        if all(a._current_notice is not None for a in agents) and len(first) == len(agents):
            break
        if time.monotonic() >= next_round:
            second_round = min(second_round, time.monotonic())
            for instance, doc in docs.items():
                try:
                    await relay.publish(notice_subject(REGION, instance), doc)
                except Exception:  # reconnecting with a full buffer: the next round sends it
                    break
            run.rounds += 1
            next_round = time.monotonic() + repeat_s
        await asyncio.sleep(0.005)
    await asyncio.gather(flushing, return_exceptions=True)
    return second_round


async def _run(server: NatsCluster | NatsProcess, instances: list[str], root: Path, password: str, kill: str | None,
               repeat_s: float, deadline_s: float) -> NoticeRun:
    run = NoticeRun(len(instances))
    first: dict[str, float] = {}
    writer = ThreadPoolExecutor(1, thread_name_prefix="notice-spool")
    admin = await sco_nats.connect(server.url, name="notice-admin")
    await sco_nats.ensure_events_stream(admin.jetstream())
    await admin.close()
    agents = _agents(server, instances, root, password, first, writer)
    relay = None
    try:
        await _start(agents, 60)
        run.spread = dict(Counter(p for p in map(_port, agents) if p is not None))

        async def quiet(_exc: Exception) -> None:
            return None

        target = _busiest(agents)[0] if kill else None
        urls = sco_nats.server_list(server.url_for("region"))
        if kill == "other":  # the relay on another member than the one killed
            urls.sort(key=lambda u: f":{target}" in u)
        elif kill == "relay":  # the relay on the member killed
            urls.sort(key=lambda u: f":{target}" not in u)
        relay = await sco_nats.connect(urls, name="notice-relay", error_cb=quiet, dont_randomize=True)
        gc.collect()
        gc.freeze()  # as the latency bench: a full collection over 1,000 agents' heap is no real agent's
        sent, docs, on_killed = await _burst(relay, instances, run, server, agents, target)
        second = await _repeat(relay, agents, docs, first, run, repeat_s, deadline_s)
        gc.unfreeze()
        received = {a.node.instance: a._current_notice.received for a in agents if a._current_notice}
        run.intake = [received[i] - sent[i] for i in instances if i in received]
        run.acted = [first[i] - sent[i] for i in instances if i in first]
        run.after_first_round = sum(1 for t in received.values() if t >= second)
        run.reconnected = sum(1 for a in on_killed if (p := _port(a)) is not None and str(p) != run.killed)
    finally:
        if relay is not None:
            await relay.close()
        for k in range(0, len(agents), 100):
            await asyncio.gather(*(a.stop() for a in agents[k:k + 100]), return_exceptions=True)
        writer.shutdown(wait=True)
    return run


def run_notices(server: NatsCluster | NatsProcess, instances: list[str], root: Path, password: str, *,
                kill: str | None, repeat_s: float = 0.5, deadline_s: float = 60.0) -> NoticeRun:
    """One burst over ``instances`` on ``server`` (started, with ``notice_users(instances, password)``).

    ``kill``: None (no fault), ``"other"`` (SIGKILL the member holding the most agents, the relay connected
    to another one) or ``"relay"`` (that member is also the relay's: what it had sent and not yet had
    delivered is lost with it).
    """
    return asyncio.run(_run(server, instances, root, password, kill, repeat_s, deadline_s))
