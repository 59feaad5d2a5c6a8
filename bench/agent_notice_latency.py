"""Notice → first drain action for 1,000 notices in one burst over 1,000 simulated nodes in one process, with
NATS authentication on (as ``sco up`` runs it) and off (before), in the same run.

Each simulated node is a full ``agent.runtime.Agent`` (notice intake, first-wins gate, drain engine, spool
with fsync, event shipping to JetStream) with an in-memory scheduler, connected as a real agent connects: its
own NATS connection to a real nats-server (JetStream on). With authentication on (``bench/nats_auth.py``: the
stack's configuration) each agent presents the credential minted for its instance (it may subscribe only to
its own notice subjects) and the notices come from the region's relay user, the only one that may publish
``sco.notice.>``; off, nats-server has no ``authorization`` block (the "before" baseline). The relay sends one
provider notice per instance subject as fast as it can; the latency of a notice is the time from its publish
call to the agent's first drain action (``mark_unschedulable``). Baseline in the same run and configuration:
the same burst delivered to one plain subscriber per instance, each on its own connection with the same
credential, that only records the arrival time (raw NATS delivery), taken before and after the agents (the
faster of the two is kept: no ordering favours the agents). Prints per configuration the p99s and
agent/raw, then the auth on/off p99 ratio (the same latency, bar ``SAME_LATENCY``) and PASS/FAIL on
agent/raw p99 ≤ 2× (judged on the authenticated configuration). Goal (DESIGN §6): ≤ 100 ms p99;
seed target ≤ 2 s. ``--rounds N`` alternates the configurations N times (the machine's load moves).

Beside the wall figures, each run prints the process CPU from the first publish to the last arrival (raw) and
to the last first action (agents): both include the publisher and nats-py's delivery, so their difference is
the agents' own work per notice. Both runs wait for their end the same way (woken by the last arrival / first
action, no polling task). One process holds all 1,000 agents, so a notice's latency includes the intake of the
notices before it: the ratio measures the agents' Python per notice against nats-py's delivery per message, not
one agent's latency (in production each agent is its own process on its own node).

    .venv/bin/python -m bench.agent_notice_latency [--nodes 1000] [--rounds 1] [--auth both|on|off]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agent.config import AgentConfig, parse_userdata, userdata_document
from agent.drain.adapters import EVICT_DONE, EVICT_GONE, LocalPlan
from agent.model import Contract, NodeIdentity, Unit
from agent.runtime import Agent
from bench._cli import stop_on_signals
from bench.nats_auth import BenchNats
from contracts.canonical import canonical_bytes
from contracts.signing import generate_keypair, load_private_key, sign_blob
from contracts.subjects import agent_inbox_prefix, notice_subject

REGION = "r1"
PARTITION = "r1/bench"
RAW_RATIO_TARGET = 2.0  # agent burst p99 <= 2x the raw NATS p99 of the same run
SAME_LATENCY = 1.25  # "the same latency as today": this bench's bar, auth on/off p99 medians


async def ensure_stream(url: str) -> None:
    import nats
    from nats.js.api import StreamConfig

    nc = await nats.connect(url)
    await nc.jetstream().add_stream(StreamConfig(name="SCO_EVENTS", subjects=["sco.events.>"]))
    await nc.close()


class MemoryScheduler:
    """In-memory scheduler: one unit per node, gone once evicted; records the first action's time."""

    name = "memory"

    def __init__(self, first_action: dict[str, float], instance: str, everyone: asyncio.Event | None = None,
                 nodes: int = 0) -> None:
        self.first_action = first_action
        self.instance = instance
        self.present = [Unit(f"job-{instance}", "etl@1")]
        self.everyone, self.nodes = everyone, nodes  # set once all ``nodes`` have acted

    def mark_unschedulable(self, reason: str) -> None:
        self.first_action.setdefault(self.instance, time.monotonic())
        if self.everyone is not None and len(self.first_action) == self.nodes:
            self.everyone.set()

    async def amark_unschedulable(self, reason: str) -> None:  # the engine awaits asyncio twins directly
        self.mark_unschedulable(reason)

    def mark_schedulable(self, reason: str) -> None:
        """Nothing to undo: the bench measures the first action only."""

    def units(self) -> list[Unit]:
        return list(self.present)

    async def aunits(self) -> list[Unit]:
        return self.units()

    async def aevict(self, unit: Unit, contract: Contract, grace_s: int) -> str:
        return self.evict(unit, contract, grace_s)

    def evict(self, unit: Unit, contract: Contract, grace_s: int) -> str:
        if unit not in self.present:
            return EVICT_GONE
        self.present.remove(unit)
        return EVICT_DONE

    def finish(self, unit: Unit, contract: Contract) -> None:
        return

    def set_ready(self, ready: bool, reason: str) -> None:
        return


class NullActuator:
    name = "null"

    def start(self, plans: list[LocalPlan], reason: str) -> None:
        return

    def finish(self, plans: list[LocalPlan]) -> None:
        return

    def remaining(self) -> int | None:
        return 0


def signed_bundle() -> tuple[bytes, bytes, bytes]:
    keys = generate_keypair()
    entry = {"workload": "etl", "version": "1", "tier": "batch", "scheduler": "slurm", "drain_budget_s": 5,
             "drain_signal": "USR1", "advisory_drain": False, "checkpoint_mode": "final", "framework": None,
             "checkpoint_interval_min": 30, "restart": "resume-from-checkpoint", "requeue": True,
             "max_unit_length_min": 60}
    payload = {"apiVersion": "sco/v1", "kind": "AgentBundle", "partition": PARTITION, "generation": 1,
               "issued_at": "2026-11-29T00:00:00Z", "source_digest": "sha256:" + "0" * 64,
               "workloads": {"etl@1": entry}}
    raw = canonical_bytes(payload)
    return raw, sign_blob(raw, load_private_key(keys.private_pem)), keys.public_pem


def notice(instance: str) -> bytes:
    now = datetime.now(UTC)
    return json.dumps({"region": REGION, "instance_id": instance, "pool_id": "p", "hall": "h1",
                       "issued_at": now.isoformat(), "terminate_at": (now + timedelta(seconds=120)).isoformat(),
                       "cause": "reclaim", "drill": True}).encode()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def burst(url: str, instances: list[str]) -> dict[str, float]:
    """Publish one notice per instance as fast as the client goes, as the region's relay (``url``)."""
    import nats

    pub = await nats.connect(url)
    sent: dict[str, float] = {}
    for instance in instances:
        sent[instance] = time.monotonic()
        await pub.publish(notice_subject(REGION, instance), notice(instance))
    await pub.flush()
    await pub.close()
    return sent


async def _gather_in_batches(coros: list[Any], size: int = 100) -> list[Any]:
    out: list[Any] = []
    for k in range(0, len(coros), size):
        out += await asyncio.gather(*coros[k:k + size])
    return out


async def baseline(server: BenchNats, instances: list[str]) -> tuple[list[float], float]:
    """NATS delivery alone: the same burst to one plain subscriber per instance, each on its own connection
    with that instance's credential (as the agents below), recording only the arrival time. Returns the
    latencies and the process CPU (ms) from the first publish to the last arrival."""
    import nats

    arrived: dict[str, float] = {}
    everyone = asyncio.Event()

    async def listener(instance: str) -> Any:
        nc = await nats.connect(server.agent_url(instance), inbox_prefix=agent_inbox_prefix(instance))

        async def cb(msg: Any) -> None:
            arrived[instance] = time.monotonic()
            if len(arrived) == len(instances):
                everyone.set()

        await nc.subscribe(notice_subject(REGION, instance), cb=cb)
        await nc.flush()
        return nc

    clients = await _gather_in_batches([listener(i) for i in instances])
    gc.collect()
    gc.freeze()
    cpu0 = time.process_time()
    sent = await burst(server.relay_url, instances)
    with contextlib.suppress(TimeoutError):  # the same wait as the agents' below: woken by the last arrival
        await asyncio.wait_for(everyone.wait(), 30)
    cpu_ms = (time.process_time() - cpu0) * 1000
    gc.unfreeze()
    await _gather_in_batches([c.close() for c in clients])
    return [arrived[i] - sent[i] for i in instances if i in arrived], cpu_ms


async def agents_run(server: BenchNats, instances: list[str], root: Path) -> dict[str, Any]:
    """The burst to one full ``Agent`` per instance, each connected as a real agent connects (its own
    connection, with its instance's minted credential when the server authenticates)."""
    raw, sig, pub = signed_bundle()
    first: dict[str, float] = {}
    everyone = asyncio.Event()
    writer = ThreadPoolExecutor(1, thread_name_prefix="bench-spool")
    agents = []
    for instance in instances:
        node = NodeIdentity(REGION, PARTITION, instance, f"node-{instance}", "p", "slurm")
        doc = userdata_document(node, raw, sig, [server.agent_url(instance)])
        ud = parse_userdata(json.dumps(doc).encode())
        cfg = AgentConfig(state_dir=root / instance, metrics_port=0)
        sched = MemoryScheduler(first, instance, everyone, len(instances))
        agents.append(Agent(cfg, ud, pub, sched, NullActuator(), writer=writer))
    for k in range(0, len(agents), 50):  # 50 at a time, each batch subscribed before the next connects
        batch = agents[k:k + 50]
        await asyncio.gather(*(a.start() for a in batch))
        end = time.monotonic() + 60
        while not all(a._subs for a in batch) and time.monotonic() < end:
            await asyncio.sleep(0.02)
    connected = sum(1 for a in agents if a._subs)
    # 1,000 agents in one process make a heap no real agent has (one agent per node); without this, a
    # full garbage collection over it lands inside the burst. Each real agent process is small.
    gc.collect()
    gc.freeze()
    cpu0 = time.process_time()
    sent = await burst(server.relay_url, instances)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(everyone.wait(), 60)
    cpu_ms = (time.process_time() - cpu0) * 1000
    latencies = [first[i] - sent[i] for i in instances if i in first]
    received = {a.node.instance: a._current_notice.received for a in agents if a._current_notice}
    intake = [received[i] - sent[i] for i in received]
    acting = [first[i] - received[i] for i in received if i in first]
    drains = [t for a in agents for t in a.drains]
    await asyncio.wait_for(asyncio.gather(*drains), 60)
    t0 = time.monotonic()
    await asyncio.gather(*(a.flush_events(timeout=60) for a in agents))
    ship_s = time.monotonic() - t0
    shipped = sum(int(a.metrics.value("sco_agent_events_shipped_total")) for a in agents)
    gc.unfreeze()
    for k in range(0, len(agents), 100):
        await asyncio.gather(*(a.stop() for a in agents[k:k + 100]))
    writer.shutdown(wait=True)
    return {"latency": latencies, "intake": intake, "acting": acting, "shipped": shipped, "ship_s": ship_s,
            "cpu_ms": cpu_ms, "connected": connected}


def configuration(auth: bool, instances: list[str], root: Path) -> dict[str, Any]:
    """One configuration's run: its own nats-server, the raw-delivery baseline, the agents, the baseline again.

    The baseline is taken before and after the agents (a fresh server's first burst may be slower than its
    later ones); the faster of the two (lower p99) is the one the agents are compared with.
    """
    server = BenchNats(root / "nats", REGION, instances, auth=auth)
    try:
        asyncio.run(ensure_stream(server.url))
        before = asyncio.run(baseline(server, instances))
        res = asyncio.run(agents_run(server, instances, root / "agents"))
        after = asyncio.run(baseline(server, instances))
    finally:
        server.stop()
    shutil.rmtree(root, ignore_errors=True)
    res["base_p99s"] = [pct(b, 0.99) if b else float("nan") for b, _ in (before, after)]
    res["base"], res["base_cpu_ms"] = min((before, after), key=lambda b: (  # complete first, then the faster
        len(b[0]) < len(instances), pct(b[0], 0.99) if b[0] else float("inf")))
    return res


def _line(name: str, xs: list[float]) -> str:
    if not xs:
        return f"{name:<36} (none)"
    return (f"{name:<36} p50 {statistics.median(xs) * 1000:7.1f} ms   p99 {pct(xs, 0.99) * 1000:7.1f} ms   "
            f"max {max(xs) * 1000:7.1f} ms")


def report(label: str, res: dict[str, Any], n: int) -> None:
    lat, base = res["latency"], res["base"]
    print(f"-- {label}")
    print(_line("raw NATS delivery of the burst", base) + f"   ({len(base)} delivered; p99 before / after the "
          f"agents {res['base_p99s'][0] * 1000:.1f} / {res['base_p99s'][1] * 1000:.1f} ms, the lower one kept)")
    print(_line("notice -> first drain action", lat) + f"   ({len(lat)} drained, {res['connected']} connected)")
    print(_line("  of which publish -> agent intake", res["intake"]))
    print(_line("  of which intake -> first action", res["acting"]))
    if lat and base:
        print(f"   agent/raw p99: {pct(lat, 0.99) / pct(base, 0.99):.2f}x")
    print(f"   process CPU from first publish to the last arrival (raw) / first action (agents): "
          f"{res['base_cpu_ms']:.0f} / {res['cpu_ms']:.0f} ms ({res['base_cpu_ms'] / n * 1000:.0f} / "
          f"{res['cpu_ms'] / n * 1000:.0f} us per notice, publisher included; agent/raw CPU "
          f"{res['cpu_ms'] / max(res['base_cpu_ms'], 1e-9):.2f}x)")
    print(f"   events shipped "
          f"{res['shipped']} ({res['shipped'] / n:.1f} per drain), spools emptied {res['ship_s']:.2f} s after")


def main() -> int:
    stop_on_signals()  # a timeout's SIGTERM stops the servers this bench starts
    logging.getLogger("nats").setLevel(logging.CRITICAL)  # a connect retried under load is not news here
    logging.getLogger("sco.agent.drain").setLevel(logging.ERROR)  # "local drain" when the box is busy
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1, help="alternate auth off/on this many times")
    parser.add_argument("--auth", choices=("both", "on", "off"), default="both")
    args = parser.parse_args()
    instances = [f"i-{n:05d}" for n in range(args.nodes)]
    modes = {"both": (False, True), "on": (True,), "off": (False,)}[args.auth]
    p99: dict[bool, list[float]] = {False: [], True: []}
    ratio: dict[bool, list[float]] = {False: [], True: []}
    print(f"notices in one burst: {len(instances)} over {len(instances)} simulated nodes (one process, "
          f"one NATS connection per node); load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for auth in modes if r % 2 == 0 else tuple(reversed(modes)):
                res = configuration(auth, instances, Path(tmp) / f"{r}-{auth}")
                label = ("auth ON: per-instance agent users, notices from the region's relay user" if auth
                         else "auth OFF: nats-server without authorization (before)")
                report(f"round {r + 1}, {label}, load {os.getloadavg()[0]:.1f}", res, len(instances))
                lat, base = res["latency"], res["base"]
                if len(lat) < len(instances) or len(base) < len(instances):
                    # a percentile over the notices that made it is not the figure: some nodes never acted
                    raise SystemExit(f"agent_notice_latency: {len(lat)} of {len(instances)} nodes drained, "
                                     f"{len(base)} of {len(instances)} notices delivered in the baseline")
                p99[auth].append(pct(lat, 0.99))
                ratio[auth].append(pct(lat, 0.99) / pct(base, 0.99))
    return summary(p99, ratio)


def summary(p99: dict[bool, list[float]], ratio: dict[bool, list[float]]) -> int:
    """The medians over rounds, the auth on/off ratio and the agent/raw verdict; 1 when a verdict is FAIL."""
    failed = False
    for auth in (False, True):
        if p99[auth]:
            print(f"auth {'ON ' if auth else 'OFF'}: notice -> first action p99 median "
                  f"{statistics.median(p99[auth]) * 1000:.1f} ms over {len(p99[auth])} round(s); "
                  f"agent/raw p99 median {statistics.median(ratio[auth]):.2f}x")
    if p99[False] and p99[True]:
        on_off = statistics.median(p99[True]) / statistics.median(p99[False])
        verdict = "PASS" if on_off <= SAME_LATENCY else "FAIL"
        failed = verdict == "FAIL"
        print(f"auth on/off p99: {on_off:.2f}x   {verdict} (same latency: <= {SAME_LATENCY:.2f}x)")
    judged = ratio[True] or ratio[False]
    worst = statistics.median(judged)
    verdict = "PASS" if worst <= RAW_RATIO_TARGET else "FAIL"
    print(f"agent burst p99 / raw NATS p99 ({'auth on' if ratio[True] else 'auth off'}): {worst:.2f}x   {verdict} "
          f"(target <= {RAW_RATIO_TARGET:.1f}x)")
    return 1 if failed or verdict == "FAIL" else 0


if __name__ == "__main__":
    sys.exit(main())
