"""The event fault soak's run: nats-server, the ClickHouse front end and ``python -m stores.ingest`` (under a
supervisor loop) on free ports under a root directory, a publisher, the seeded SIGKILLs and restarts, and the
sampler that times recovery; the plan and the reconciliation are ``testkit.eventsoak``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from contracts.subjects import EVENTS_STREAM
from sco.stack import services
from stores import clickhouse, migrate
from stores import nats as sco_nats
from stores.ingest import CONSUMER
from testkit.clickhouse import ClickHouseProcess
from testkit.eventsoak import KillRecord, SoakPlan, SoakResult, longest_stall, payload, poison, reconcile, recoveries
from testkit.nats import NatsCluster, NatsProcess, await_jetstream
from testkit.paths import REPO

__all__ = ["ClusterLeaderTarget", "IngestSupervisor", "run_soak"]


class ClusterLeaderTarget:
    """A NATS cluster as the soak's ``nats`` target: ``kill`` SIGKILLs the member leading ``SCO_EVENTS``
    (found with ``$JS.API.STREAM.INFO``), ``start`` brings that member back; the URL lists every member."""

    def __init__(self, cluster: NatsCluster) -> None:
        self.cluster = cluster
        self.killed: list[int] = []  # the members killed, in order (the leader at each kill)
        self.started = False

    @property
    def url(self) -> str:
        return self.cluster.url

    def start(self) -> None:
        if not self.started:
            self.cluster.start()
            self.started = True
        elif self.killed:
            self.cluster.restart_member(self.killed[-1])

    def kill(self) -> None:
        index = self.cluster.leader(EVENTS_STREAM)
        self.cluster.kill(index)
        self.killed.append(index)

    def stop(self) -> None:
        self.cluster.close()

    def caught_up(self, timeout: float = 120.0) -> None:
        """Return once every replica of ``SCO_EVENTS`` is current again (the restarted member caught up)."""
        await_jetstream(self.url, timeout, EVENTS_STREAM)


class IngestSupervisor:
    """``python -m stores.ingest`` as a supervisor runs it: restarted whenever it exits."""

    def __init__(self, nats_url: str, clickhouse_url: str, log: Path, batch: int, ack_wait_s: float) -> None:
        self.argv = [sys.executable, "-m", "stores.ingest", "--nats", nats_url, "--clickhouse", clickhouse_url,
                     "--batch", str(batch), "--ack-wait", str(ack_wait_s)]
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self.held = False  # killed on purpose: the fault restarts it, not the supervisor

    def start(self) -> None:
        """Start the ingest."""
        self.held = False
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(REPO)})

    def kill(self) -> None:
        """SIGKILL and reap; held down until ``start``."""
        self.held = True
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            self.proc.wait()

    def tend(self) -> None:
        """Restart the ingest when it exited on its own (ING001 after NATS stayed away)."""
        if not self.held and self.proc is not None and self.proc.poll() is not None:
            self.restarts += 1
            self.start()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


class _Publisher:
    """Core-NATS publishes with a reply inbox per message and the PubAcks collected by one subscription:
    a window of 1,000 in one go, without nats-py's future and timer per JetStream publish (3–5× faster)."""

    def __init__(self, nc: Any, timeout_s: float = 2.0) -> None:
        self.nc, self.timeout_s = nc, timeout_s
        self.prefix = nc.new_inbox()
        self.acked: set[str] = set()
        self.refused: set[str] = set()

    async def start(self) -> None:
        """Subscribe to the acknowledgements (nats-py renews the subscription after a reconnect)."""
        await self.nc.subscribe(self.prefix + ".*", cb=self._on_ack)

    async def _on_ack(self, msg: Any) -> None:
        if msg.headers and msg.headers.get("Status"):
            return  # 503 no responders (the stream is not up yet)
        if msg.data.startswith(b"{") and b'"error"' not in msg.data:
            self.acked.add(msg.subject.rsplit(".", 1)[1])

    async def send(self, window: dict[str, tuple[str, bytes, str]]) -> None:
        """Publish ``window`` (key → subject, data, msg id) until each is acknowledged or refused as too big."""
        import nats.errors

        while pending := [k for k in window if k not in self.acked and k not in self.refused]:
            for key in pending:
                subject, data, msg_id = window[key]
                try:
                    await self.nc.publish(subject, data, reply=f"{self.prefix}.{key}",
                                          headers={"Nats-Msg-Id": msg_id})
                except nats.errors.MaxPayloadError:
                    self.refused.add(key)
                except Exception:
                    await asyncio.sleep(0.2)  # reconnecting with a full buffer: the rest go next round
                    break
            deadline = time.monotonic() + self.timeout_s
            while time.monotonic() < deadline and any(k not in self.acked and k not in self.refused
                                                      for k in pending):
                await asyncio.sleep(0.005)


def _kill_frontend(front: ClickHouseProcess) -> None:
    assert front.running is not None
    pid = front.running.pid
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    services.reap(pid, 30)
    front.running = None


class _Soak:
    """One run's processes and tasks."""

    def __init__(self, plan: SoakPlan, root: Path, batch: int, window: int, ack_wait_s: float,
                 nats_cluster: int = 1) -> None:
        self.plan, self.root, self.window, self.ack_wait_s = plan, root, window, ack_wait_s
        self.nats: NatsProcess | ClusterLeaderTarget = (
            NatsProcess(root / "nats") if nats_cluster == 1 else ClusterLeaderTarget(NatsCluster(nats_cluster,
                                                                                                 root / "nats")))
        self.front = ClickHouseProcess(root / "ch")
        self.ch_url = ""
        self.ingest: IngestSupervisor | None = None
        self.batch = batch
        self.published = 0
        self.publishing = True
        self.samples: list[tuple[float, int, int]] = []  # (when, rows stored, valid published; -1 during a fault)
        self.kills: list[KillRecord] = []
        self.stop = asyncio.Event()
        self.faulting = False  # from a kill until its restart returned

    def start(self) -> None:
        self.nats.start()
        self.front.start()
        admin = clickhouse.client(self.front.url)
        admin.command("CREATE DATABASE IF NOT EXISTS soak")
        admin.close()
        self.ch_url = f"{self.front.url}/?database=soak"
        client = clickhouse.client(self.ch_url)
        migrate.migrate_clickhouse(client)
        client.close()
        self.ingest = IngestSupervisor(self.nats.url, self.ch_url, self.root / "ingest.log", self.batch,
                                       self.ack_wait_s)
        self.ingest.start()

    def close(self) -> None:
        if self.ingest is not None:
            self.ingest.stop()
        self.front.stop()
        self.nats.stop()

    def count(self) -> int | None:
        try:
            client = clickhouse.client(self.ch_url)
        except Exception:
            return None
        try:
            return int(client.command("SELECT count() FROM events"))
        except Exception:
            return None
        finally:
            client.close()

    async def sample(self) -> None:
        while not self.stop.is_set():
            value = await asyncio.to_thread(self.count)
            if value is not None:
                self.samples.append((time.monotonic(), value, -1 if self.faulting else self.published))
            await asyncio.sleep(0.25)

    async def supervise(self) -> None:
        assert self.ingest is not None
        while not self.stop.is_set():
            self.ingest.tend()
            await asyncio.sleep(0.2)

    def _ready(self, restarted: float, before: int, at: int) -> bool:
        """A fresh count (after the last restart) that moved past the last fault's and reached ``at``."""
        if not self.samples:
            return False
        when, count, _ = self.samples[-1]
        return when > restarted and (count > before or count >= self.plan.events) and count >= at

    async def chaos(self) -> None:
        assert self.ingest is not None
        restarted, before = 0.0, -1
        for fault in self.plan.kills:  # each once the pipeline stored again after the previous fault
            while not self._ready(restarted, before, fault.at):
                await asyncio.sleep(0.05)
            stored = before = self.samples[-1][1]
            record = KillRecord(fault.target, self.published, stored, time.monotonic())
            self.faulting = True
            if fault.target == "ingest":
                self.ingest.kill()
            elif fault.target == "nats":
                await asyncio.to_thread(self.nats.kill)
            else:
                await asyncio.to_thread(_kill_frontend, self.front)
            self.kills.append(record)
            await asyncio.sleep(fault.down_s)
            if fault.target == "ingest":
                self.ingest.start()
            elif fault.target == "nats":
                await asyncio.to_thread(self.nats.start)
            else:
                await asyncio.to_thread(self.front.start)
            self.faulting = False
            restarted = time.monotonic()

    async def publish(self, nc: Any, max_payload: int) -> tuple[int, int]:
        """Publish every valid event and the poisons, a window at a time, each resent with the same
        ``Nats-Msg-Id`` until the stream acknowledged it (an agent's spool)."""
        poisons: dict[int, list[tuple[int, str]]] = {}
        for number, (after, kind) in enumerate(self.plan.poisons):
            poisons.setdefault(after, []).append((number, kind))
        publisher = _Publisher(nc)
        await publisher.start()
        streamed = refused = 0
        for start in range(0, self.plan.events, self.window):
            stop = min(start + self.window, self.plan.events)
            await self._held(stop)
            window = {f"v{i}": payload(i) for i in range(start, stop)}
            kinds = {f"p{n}": k for i in range(start, stop) for n, k in poisons.get(i, [])}
            window.update({key: poison(int(key[1:]), kind, max_payload) for key, kind in kinds.items()})
            await publisher.send(window)
            streamed += sum(1 for key in kinds if key in publisher.acked)
            refused += sum(1 for key, kind in kinds.items() if key in publisher.refused and kind == "oversize")
            self.published = stop
        return streamed, refused

    async def _held(self, stop: int) -> None:
        """Wait while a fault that holds the publisher before ``stop`` has not struck yet (``KillPlan.hold_from``)."""
        for k, fault in enumerate(self.plan.kills):
            while fault.hold_from is not None and stop > fault.hold_from and len(self.kills) <= k:
                await asyncio.sleep(0.05)

    async def drained(self, js: Any, deadline: float) -> bool:
        """Wait until the consumer has nothing pending and nothing unacknowledged (the ingest is done)."""
        while time.monotonic() < deadline:
            try:
                info = await js.consumer_info(EVENTS_STREAM, CONSUMER, timeout=2)
                if int(info.num_pending) == 0 and int(info.num_ack_pending) == 0:
                    return True
            except Exception:
                pass
            await asyncio.sleep(0.5)
        return False


async def _run(soak: _Soak, drain_timeout_s: float) -> SoakResult:
    async def quiet(_exc: Exception) -> None:  # nats-py prints every failed reconnect otherwise
        return None

    nc = await sco_nats.connect(soak.nats.url, name="soak-publisher", error_cb=quiet)
    js = nc.jetstream()
    await sco_nats.ensure_events_stream(js)
    max_payload = int(nc.max_payload)
    valid = soak.plan.events
    tasks = [asyncio.create_task(t) for t in (soak.sample(), soak.supervise())]
    chaos = asyncio.create_task(soak.chaos())
    started = time.monotonic()
    try:
        streamed, refused = await soak.publish(nc, max_payload)
        publish_s = time.monotonic() - started
        await chaos
        ok = await soak.drained(js, time.monotonic() + drain_timeout_s)
        elapsed = time.monotonic() - started
        caught_up = None
        if isinstance(soak.nats, ClusterLeaderTarget):
            try:
                await asyncio.to_thread(soak.nats.caught_up)
                caught_up = True
            except TimeoutError:
                caught_up = False
    finally:
        chaos.cancel()
        soak.stop.set()
        await asyncio.gather(*tasks, chaos, return_exceptions=True)
        await nc.close()
    assert soak.ingest is not None
    result = SoakResult(valid, elapsed, publish_s, streamed, refused, kills=soak.kills,
                        ingest_restarts=soak.ingest.restarts, drained=ok, replicas_current=caught_up)
    if isinstance(soak.nats, ClusterLeaderTarget):
        result.leaders_killed = [soak.nats.cluster.members[i].server_name for i in soak.nats.killed]
    recoveries(soak.kills, soak.samples, valid, started + elapsed if ok else None)
    result.longest_stall_s = longest_stall(soak.samples)
    await asyncio.to_thread(reconcile, soak.ch_url, soak.plan, result, max_payload)
    return result


def run_soak(plan: SoakPlan, root: Path, *, batch: int = 2000, window: int = 1000, ack_wait_s: float = 5.0,
             drain_timeout_s: float = 180.0, nats_cluster: int = 1) -> SoakResult:
    """Run ``plan`` with its servers and ingest under ``root``; everything is stopped before returning.

    ``ack_wait_s``: the ingest's ``--ack-wait``, how long the events a killed ingest held wait for redelivery.
    ``nats_cluster``: 3 runs a JetStream cluster of three (streams at 3 replicas) whose ``nats`` fault is the
    SIGKILL of the member leading ``SCO_EVENTS``.
    """
    soak = _Soak(plan, root, batch, window, ack_wait_s, nats_cluster)
    try:
        soak.start()
        return asyncio.run(_run(soak, drain_timeout_s))
    finally:
        soak.close()
