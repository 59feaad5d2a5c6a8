"""The demo's node fleet: one agent per simulated instance, started when the instance appears and stopped
after it is gone. A handful are real ``sco-agent`` processes: up to ``userdata_max`` at a time on simulated
Kubernetes nodes, booted from the user-data the controller sent, read back from the region
(``userdata_agents``; kind ``USERDATA_KIND``), and one on each of the real Slurm test bed's nodes when it is up
(kind ``"process"``); the rest are in-process agents (the same ``agent.runtime.Agent``) on simulated nodes
(``simnode``).

For the in-process and Slurm-bed agents the supervisor plays cloud-init with the rendered result: it writes
each node's user-data JSON with the signed agent bundle of the instance's partition, and logs the agent in as
the instance's own NATS user (``mint``: the runner passes the password of the launch's user-data, so the
credential is the one the controller mints, whichever of the two registers it first).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.config import AgentConfig, parse_userdata, userdata_document
from agent.model import NodeIdentity
from agent.runtime import Agent, SystemClock
from contracts.bundle_wire import AGENT_BUNDLE, AGENT_SIGNATURE
from contracts.provider import InstanceStatus, ProviderError

from .simnode import SimLocalActuator, SimScheduler
from .userdata_agents import Launch, UserDataAgents

__all__ = ["USERDATA_KIND", "Fleet", "NodeAgent"]

USERDATA_KIND = "user-data process"  # a real sco-agent booted from the controller's rendered user-data


@dataclass
class NodeAgent:
    instance: str
    workload: str
    partition: str
    kind: str  # "process" (Slurm bed) | USERDATA_KIND | "in-process"
    agent: Agent | None = None
    process: subprocess.Popen[bytes] | None = None
    scheduler: SimScheduler | None = None
    slurm_node: str | None = None
    boot: asyncio.Task[None] | None = None  # a USERDATA_KIND node's boot, while it runs


@dataclass
class Fleet:
    provider: Any                      # contracts.provider.Provider (the simulated region's client)
    bundle_root: Path                  # <out> of `sco contracts compile`
    public_key: Path
    nats_url: str                      # used when ``mint`` is None
    metadata_url: str                  # the region's metadata base URL
    state_root: Path
    slurm_nodes: list[str] = field(default_factory=list)  # free real Slurm test-bed nodes (node1..node3)
    slurm_conf: str | None = None
    seed: int = 1
    on_change: Callable[[str, NodeAgent], None] | None = None
    agents: dict[str, NodeAgent] = field(default_factory=dict)
    slow_scheduler: bool = False       # the scheduler "stops answering" (forces the local path)
    mint: Callable[[str, str], str] | None = None  # (region, instance) -> the agent's own NATS URL (sco up's)
    userdata: UserDataAgents | None = None  # boots real agents from the controller's user-data
    userdata_max: int = 0                   # how many of them run at a time
    userdata_booted: list[str] = field(default_factory=list)           # instances, in boot order
    userdata_refused: list[str] = field(default_factory=list)          # "<instance>: why" (check refused)

    def _bundle(self, partition: str) -> tuple[bytes, bytes, dict[str, Any]]:
        region, cluster = partition.split("/", 1)
        d = self.bundle_root / region / cluster
        raw = (d / AGENT_BUNDLE).read_bytes()
        return raw, (d / AGENT_SIGNATURE).read_bytes(), json.loads(raw)

    def _userdata(self, inst: Any, partition: str, node_name: str | None) -> tuple[bytes, str, str]:
        raw, sig, payload = self._bundle(partition)
        owner = inst.owner
        scheduler = next((w["scheduler"] for w in payload["workloads"].values()
                          if w["workload"] == owner.workload), "kubernetes")
        ref = next((k for k, w in payload["workloads"].items() if w["workload"] == owner.workload), owner.workload)
        node = NodeIdentity(region=partition.split("/")[0], partition=partition, instance=inst.instance_id,
                            node_name=node_name or f"node-{inst.instance_id[:8]}", pool=inst.pool_id,
                            scheduler=scheduler)
        nats = self.mint(node.region, inst.instance_id) if self.mint else self.nats_url  # minted per instance
        doc = userdata_document(node, raw, sig, [nats], f"{self.metadata_url}/metadata/{inst.instance_id}")
        return json.dumps(doc).encode(), ref, scheduler

    async def sync(self) -> None:
        """Start agents for new instances; stop the agents of instances that are gone."""
        instances = await asyncio.to_thread(self.provider.list_instances)
        live = {i.instance_id: i for i in instances if i.owner is not None and i.status is not InstanceStatus.DELETED}
        for iid, inst in live.items():
            if iid not in self.agents and inst.status is InstanceStatus.ACTIVE:
                await self._start(inst)
        for iid in [i for i in self.agents if i not in live]:
            await self._stop(self.agents.pop(iid))

    def _wants_userdata(self, inst: Any) -> bool:
        running = sum(1 for a in self.agents.values() if a.kind == USERDATA_KIND)
        return (self.userdata is not None and running < self.userdata_max
                and self.userdata.qualifies(inst.owner.partition, inst.owner.workload))

    async def _boot_userdata(self, inst: Any, node: NodeAgent) -> None:
        """Boot the reserved node's real agent from the launch's user-data, beside the rest of the fleet's
        starts (a boot runs ``sco-agent check`` first: seconds on a loaded machine); a node whose files are
        refused gets an in-process agent instead, and the refusal is counted."""
        assert self.userdata is not None
        launch = Launch(inst.instance_id, inst.owner.partition.split("/")[0], inst.owner.partition, inst.pool_id,
                        inst.owner.workload, inst.launched_at)
        try:
            await asyncio.to_thread(self.userdata.boot, launch)
        except (RuntimeError, OSError, ValueError, ProviderError) as exc:  # CloudConfigError is a ValueError
            self.userdata_refused.append(f"{inst.instance_id}: {exc}")
            if self.agents.get(inst.instance_id) is node:  # still live: an in-process agent instead
                del self.agents[inst.instance_id]
                await self._start(inst, userdata_ok=False)
            return
        self.userdata_booted.append(inst.instance_id)
        if self.on_change:
            self.on_change("started", node)

    async def _start(self, inst: Any, userdata_ok: bool = True) -> None:
        partition = inst.owner.partition
        if userdata_ok and self._wants_userdata(inst):
            node = NodeAgent(inst.instance_id, inst.owner.workload, partition, USERDATA_KIND)
            self.agents[inst.instance_id] = node  # reserved now, booted in the background
            node.boot = asyncio.create_task(self._boot_userdata(inst, node))
            return
        slurm_node = None
        probe, _, scheduler = self._userdata(inst, partition, None)
        if scheduler == "slurm" and self.slurm_nodes and self.slurm_conf:
            slurm_node = self.slurm_nodes.pop(0)
        data, ref, _ = self._userdata(inst, partition, slurm_node) if slurm_node else (probe, _, scheduler)
        state = self.state_root / inst.instance_id
        state.mkdir(parents=True, exist_ok=True)
        (state / "user-data.json").write_bytes(data)
        node = NodeAgent(inst.instance_id, inst.owner.workload, partition, "process" if slurm_node else "in-process")
        if slurm_node:
            env = {**os.environ, "SCO_AGENT_SPOOL_FSYNC": "false", "SLURM_CONF": self.slurm_conf or "",
                   "SCO_AGENT_SLURM_CONF": self.slurm_conf or ""}
            # a test-bed node reused for a new instance stands in for a freshly booted node: resume it (the
            # previous instance's agent left it drained, as it should)
            await asyncio.to_thread(subprocess.run, ["scontrol", "update", f"nodename={slurm_node}", "state=resume"],
                                    capture_output=True, env=env, timeout=10)
            node.process = subprocess.Popen(
                [sys.executable, "-m", "agent.cli", "run", "--userdata", str(state / "user-data.json"),
                 "--public-key", str(self.public_key), "--state-dir", str(state), "--metrics-port", "0"],
                stdout=subprocess.DEVNULL, stderr=(state / "agent.log").open("wb"), env=env)
            node.slurm_node = slurm_node
        else:
            userdata = parse_userdata(data, str(state / "user-data.json"))
            cfg = AgentConfig(userdata=state / "user-data.json", public_key=self.public_key, state_dir=state,
                              metrics_port=0, spool_fsync=False, refresh_s=3600.0)
            clock = SystemClock()  # one clock for the node: its units' start times and its agent's notice receipt
            sched = SimScheduler(userdata.node.node_name, ref, seed=self.seed,
                                 slow_s=1.0 if self.slow_scheduler else 0.0, now=clock.now,
                                 booted_at=inst.launched_at)
            node.scheduler = sched
            node.agent = Agent(cfg, userdata, self.public_key.read_bytes(), sched, SimLocalActuator(sched),
                               clock=clock)
            await node.agent.start()
        self.agents[inst.instance_id] = node
        if self.on_change:
            self.on_change("started", node)

    async def _stop(self, node: NodeAgent) -> None:
        if node.boot is not None:
            with contextlib.suppress(Exception):
                await node.boot  # a boot cannot be interrupted halfway: let it end, then stop what it started
        if node.kind == USERDATA_KIND and self.userdata is not None:
            await asyncio.to_thread(self.userdata.stop, node.instance)
        if node.agent is not None:
            with contextlib.suppress(Exception):
                await node.agent.flush_events(timeout=2)
                await node.agent.stop()
        if node.slurm_node is not None:
            self.slurm_nodes.append(node.slurm_node)  # the Slurm node can carry the next instance
        if node.process is not None:
            node.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(node.process.wait, 10)
            if node.process.poll() is None:
                node.process.kill()
        if self.on_change:
            self.on_change("stopped", node)

    def set_scheduler_outage(self, on: bool) -> None:
        """Make every node's scheduler slow (1 s an answer) or answer at once again."""
        self.slow_scheduler = on
        for a in self.agents.values():
            if a.scheduler is not None:
                a.scheduler.slow_s = 1.0 if on else 0.0

    async def close(self) -> None:
        """Stop every agent of the fleet and the user-data agents."""
        for iid in list(self.agents):
            await self._stop(self.agents.pop(iid))
        if self.userdata is not None:
            await asyncio.to_thread(self.userdata.close)
