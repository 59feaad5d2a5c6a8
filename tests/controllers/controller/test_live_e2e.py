"""End to end on the wall clock: the simulated region as a service (HTTP + notices on NATS + events on
JetStream), real PostgreSQL and NATS, the outbox relay, a thin agent stand-in that answers notices with drain
events, the streaming exclusion watcher, and the real Slurm test bed as the claim source.

One scenario, in order: pending contracted Slurm jobs become instances across ≥ 8 pools within the caps; a
reclaim wave is replaced while the old instances drain; three waves on one pool exclude it within seconds and
it receives no new units; a hall-wide reclaim moves the floor to the other halls and starts fallback within the
spend cap, asks the approver (Alertmanager webhook) beyond it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from aiohttp import web

from contracts.events import Event
from contracts.provider import Notice
from controllers.controller.approvals import http_webhook
from controllers.controller.breaker import SafetyConfig
from controllers.controller.budget import BudgetedProvider, split_budget
from controllers.controller.claims_slurm import SlurmSource
from controllers.controller.exclusion import ExclusionConfig
from controllers.controller.exclusion_stream import ExclusionStream
from controllers.controller.floor_keeper import FloorConfig
from controllers.controller.loop import Controller, ControllerSettings
from controllers.controller.replacement import run
from controllers.controller.store import Store
from controllers.providers.simulated import SimulatedProvider
from controllers.simregion.clock import WallClock
from controllers.simregion.config import RegionConfig
from controllers.simregion.region import SimulatedRegion
from controllers.simregion.service import RegionService
from stores import nats as sco_nats
from stores.outbox import Relay
from testkit.builders import PARTITION, contract, contracts
from tests.support.testbeds import SLURM_CONF

pytestmark = [pytest.mark.testbed, pytest.mark.xdist_group("slurm-bed")]
CONF = SLURM_CONF
ENV = {**os.environ, "SLURM_CONF": CONF}


class NoAudit:
    def insert(self, *args: Any, **kwargs: Any) -> None:
        return None


@pytest.fixture
def slurm_jobs() -> Iterator[list[str]]:
    made: list[str] = []
    yield made
    if made:
        subprocess.run(["scancel", *made], env=ENV, check=False)


def sbatch(comment: str, n: int) -> list[str]:
    out = []
    for _ in range(n):
        r = subprocess.run(["sbatch", "--parsable", "--hold", "-p", "reclaimable", "-c", "1", f"--comment={comment}",
                            "--wrap", "sleep 600"], capture_output=True, text=True, env=ENV, check=True)
        out.append(r.stdout.strip().split(";")[0])
    return out


async def until(what: str, fn: Any, timeout: float = 120.0, detail: Any = None) -> Any:
    """Poll ``fn`` until truthy; the limit is patient (a loaded 2-core machine) and only bounds a broken build."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}" + (f": {detail()}" if detail else ""))
        await asyncio.sleep(0.1)


def test_live_placement_replacement_exclusion_and_hall_loss(slurm_jobs: list[str], pg_migrated_url: str,
                                                            nats_url: str) -> None:
    etl = contract("etl", "T3", vcpu=4, mem=1)
    train = contract("train", "T1", vcpu=4, mem=1, floor_pct=30,
                     fallback={"spend_cap_24h_eur": 60, "approver": "cfo@example.org"})
    slurm_jobs += sbatch(f"contract={etl.ref}", 60) + sbatch(f"contract={train.ref}", 60) + sbatch("no contract", 1)
    asyncio.run(_scenario(etl.ref, train.ref, contracts(etl, train), pg_migrated_url, nats_url))


async def _scenario(etl_ref: str, train_ref: str, cs: dict[str, Any], pg: str, nats_url: str) -> None:
    stop = asyncio.Event()
    clock = WallClock()
    region = SimulatedRegion(RegionConfig(seed=11, reclaim_rate_pct_h=0, hall_reclaims_per_30d=0,
                                          bursts_per_aggregate_day=0), clock)
    service = RegionService(region, nats_url=nats_url, tick_s=0.05)
    await service.start()
    nc = await sco_nats.connect(nats_url)
    js = nc.jetstream()
    await sco_nats.ensure_events_stream(js)
    seen: list[tuple[Event, float]] = []

    async def collect(msg: Any) -> None:
        seen.append((Event.from_json(msg.data), time.monotonic()))

    async def agent(msg: Any) -> None:  # the thin agent stand-in: drains on its own, from the notice alone
        n = Notice.model_validate_json(msg.data)
        for kind in ("drain-started", "drained"):
            ev = Event(kind=kind, time=datetime.now(UTC), region="r1", pool=n.pool_id, instance=n.instance_id,
                       cause=n.cause, source="agent-standin")
            await sco_nats.publish_event(js, ev)

    await nc.subscribe("sco.events.r1.>", cb=collect)
    await nc.subscribe("sco.notice.r1.>", cb=agent)
    hooks: list[dict[str, Any]] = []

    async def hook(request: web.Request) -> web.Response:
        hooks.append(await request.json())
        return web.json_response({})

    app = web.Application()
    app.add_routes([web.post("/alerts", hook)])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    hook_port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    conns = [psycopg.connect(pg, autocommit=True) for _ in range(3)]
    bucket = split_budget(10, [PARTITION])[PARTITION]
    ctl = Controller(ControllerSettings("r1", PARTITION, safety=SafetyConfig(recovery_share=Decimal(1)),
                                        floor=FloorConfig(hall_lost_min=3)),
                     BudgetedProvider(SimulatedProvider(service.url, region="r1"), bucket), conns[0],
                     SlurmSource(("reclaimable",), slurm_conf=CONF), cs, clock,
                     webhook=http_webhook(f"http://127.0.0.1:{hook_port}/alerts"))
    excl = ExclusionStream(Store(conns[1], "r1", PARTITION), ExclusionConfig(wave_gap=timedelta(seconds=0.5)))
    tasks = [asyncio.create_task(service.serve(stop)), asyncio.create_task(run(ctl, nc, interval_s=1.0, stop=stop)),
             asyncio.create_task(Relay(conns[2], js, NoAudit()).run(stop, idle_sleep=0.05)),
             asyncio.create_task(excl.run(js, stop, clock))]

    def events(kind: str) -> list[Event]:
        return [e for e, _ in seen if str(e.kind) == kind and e.source in ("controller", "exclusion-watcher")]

    def mine(workload: str | None = None) -> list[Any]:
        return [i for i in region.list_instances() if i.status == "active" and i.owner
                and (workload is None or i.owner.workload == workload)]

    def plans() -> dict[str, Any]:
        with conns[2].transaction():
            return {r[0]: json.loads(r[1]) for r in conns[2].execute(
                "SELECT workload, plan::text FROM plans WHERE in_force")}

    last_diff: list[Any] = []

    def converged(ignore_pool: str = "") -> bool:
        """Every slot of the plan is filled exactly (``ignore_pool``: an excluded pool whose old instances
        stay until the scheduler reports them idle three times)."""
        want = Counter({(w, a["pool"], a["purpose"]): a["instances"] for w, p in plans().items()
                        for a in p["allocations"]})
        have = Counter((i.owner.workload, i.pool_id, i.metadata["sco_purpose"]) for i in mine()
                       if i.pool_id != ignore_pool and i.metadata["sco_purpose"] != "fallback")
        last_diff[:] = [want - have, have - want]
        return bool(want) and want == have

    try:
        # 1. placement within the caps
        await until("the plan to be launched", converged)
        for w, p in plans().items():
            reclaim = {a["pool"]: a["units"] for a in p["allocations"] if a["purpose"] == "reclaimable"}
            assert len(reclaim) >= 8, w
            assert max(reclaim.values()) <= 0.15 * sum(reclaim.values())
        floor_halls = Counter(i.hall for i in mine("train") if i.metadata["sco_purpose"] == "floor")
        assert len(floor_halls) == 3
        assert events("claim-refused")

        # 2. a reclaim wave is replaced while the old instances drain
        victims = tuple(i.instance_id for i in mine("etl")[:4])
        t0 = time.monotonic()
        region.reclaim(victims, drill=False)
        replaced = await until("replacement", lambda: [
            (e, t) for e, t in seen
            if str(e.kind) == "replaced" and set(str(e.attributes["replaced"]).split(",")) & set(victims)])
        assert replaced[0][1] - t0 < 5.0
        print(f"replacement event {replaced[0][1] - t0:.2f} s after the reclaim call")
        await until("the drained events of the stand-in agent",
                    lambda: {e.instance for e, _ in seen if str(e.kind) == "drained"} >= set(victims))
        assert all(region.instance(v).status == "notified" for v in victims)  # still draining when replaced
        await until("convergence after the wave", converged)

        # 3. three waves on one pool exclude it within seconds; it receives no new units
        target = Counter(i.pool_id for i in mine("etl")).most_common(1)[0][0]
        for _ in range(3):
            inst = await until("an instance in the target pool", lambda: [i for i in mine() if i.pool_id == target])
            region.reclaim((inst[0].instance_id,), drill=False)
            third = time.monotonic()
            await asyncio.sleep(1.0)
        excluded = await until("the exclusion", lambda: [(e, t) for e, t in seen if str(e.kind) == "excluded"
                                                         and e.pool == target])
        assert excluded[0][1] - third < 5.0
        print(f"excluded event {excluded[0][1] - third:.2f} s after the third wave")
        t_ex = datetime.now(UTC)
        await until("convergence after the exclusion", lambda: converged(target), detail=lambda: last_diff)
        await asyncio.sleep(2.0)
        assert not [i for i in mine() if i.pool_id == target and i.launched_at and i.launched_at > t_ex]
        assert all(a["pool"] != target for p in plans().values() for a in p["allocations"])

        # 4. hall-wide reclaim: floor restored from other halls, capped fallback, approval beyond the cap
        before = len(events("fallback-started")) + len(events("approval-requested"))
        floor_h1 = tuple(i.instance_id for i in mine("train") if i.metadata["sco_purpose"] == "floor"
                         and i.hall == "h1")
        region.hall_reclaim("h1")
        region.reclaim(floor_h1, drill=False)  # power loss: the committed instances there go as well
        restored = await until("floor restored", lambda: events("floor-restored"))
        assert restored[0].attributes["within_promise"] is True
        await until("fallback or, beyond the cap, an approval request",
                    lambda: len(events("fallback-started")) + len(events("approval-requested")) > before)
        await until("approval request", lambda: hooks and events("approval-requested"))
        assert events("fallback-started")
        assert hooks[0]["alerts"][0]["labels"]["approver"] == "cfo@example.org"
        assert "h1" not in {i.hall for i in mine("train") if i.metadata["sco_purpose"] == "floor"}
        with conns[2].transaction():
            row = conns[2].execute("SELECT coalesce(sum(amount_eur), 0) FROM spend_reservations WHERE "
                                   "workload = 'train' AND state IN ('held', 'consumed')").fetchone()
        assert row is not None
        spent = row[0]
        assert 0 < Decimal(spent) <= Decimal(60)
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        await runner.cleanup()
        await nc.close()
        await service.stop()
        for c in conns:
            c.close()
