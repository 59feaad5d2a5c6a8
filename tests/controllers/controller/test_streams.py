"""The streaming parts on real NATS/JetStream and PostgreSQL: the exclusion watcher excludes a pool within
seconds of the third reclamation wave and writes the evidence; a notice wakes the controller at once; only
the lease holder of a partition acts."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import psycopg

from contracts.events import Event
from controllers.controller.breaker import SafetyConfig
from controllers.controller.exclusion import ExclusionConfig
from controllers.controller.exclusion_stream import ExclusionStream
from controllers.controller.loop import Controller, ControllerSettings
from controllers.controller.replacement import run
from controllers.controller.store import Store
from controllers.simregion.clock import WallClock
from controllers.simregion.config import RegionConfig
from controllers.simregion.region import SimulatedRegion
from stores import nats as sco_nats
from testkit.builders import PARTITION, FakeSource, contract, contracts
from tests.controllers.controller.helpers import StepClock


def test_three_waves_on_jetstream_exclude_the_pool_within_seconds_with_the_evidence(pg_migrated_url: str,
                                                                                   nats_url: str) -> None:
    conn = psycopg.connect(pg_migrated_url, autocommit=True)

    async def scenario() -> float:
        nc = await sco_nats.connect(nats_url)
        js = nc.jetstream()
        await sco_nats.ensure_events_stream(js)
        stream = ExclusionStream(Store(conn, "r1", PARTITION), ExclusionConfig(wave_gap=timedelta(seconds=0.2)))
        stop = asyncio.Event()
        task = asyncio.create_task(stream.run(js, stop, WallClock()))
        for n in range(3):
            await sco_nats.publish_event(js, Event(kind="notice", time=datetime.now(UTC), region="r1", pool="pX",
                                                   instance=f"i{n}", cause="reclaimed", source="simregion"))
            third = time.monotonic()
            await asyncio.sleep(0.3)
        while not stream.excluded and time.monotonic() - third < 60:  # a limit for a broken build only
            await asyncio.sleep(0.02)
        latency = time.monotonic() - third
        stop.set()
        await task
        await nc.close()
        return latency

    latency = asyncio.run(scenario())
    row = conn.execute("SELECT reason, offences, evidence, until - excluded_at FROM exclusions WHERE pool = 'pX'"
                       ).fetchone()
    assert row is not None and latency < 60.0
    assert "3 reclamation waves" in row[0] and row[1] == 1 and len(row[2]) == 3 and row[3] == timedelta(hours=2)
    kinds = [json.loads(bytes(r[0]))["kind"] for r in conn.execute("SELECT payload FROM outbox")]
    assert kinds == ["excluded"]
    conn.close()


def test_a_notice_wakes_the_controller_before_its_interval(pg_migrated_url: str, nats_url: str) -> None:
    conn = psycopg.connect(pg_migrated_url, autocommit=True)
    clock = StepClock()
    region = SimulatedRegion(RegionConfig(reclaim_rate_pct_h=0, hall_reclaims_per_30d=0), clock)
    etl = contract("etl")
    source = FakeSource()
    source.demand(etl.ref, 20)
    ctl = Controller(ControllerSettings("r1", PARTITION, safety=SafetyConfig(recovery_share=Decimal(1))), region,
                     conn, source, contracts(etl), clock)
    passes: list[float] = []

    async def scenario() -> None:
        nc = await sco_nats.connect(nats_url)
        js = nc.jetstream()
        await sco_nats.ensure_events_stream(js)
        stop = asyncio.Event()
        task = asyncio.create_task(run(ctl, nc, interval_s=30.0, stop=stop,
                                       on_pass=lambda r: passes.append(time.monotonic())))
        while not passes:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        t0 = time.monotonic()
        await sco_nats.publish_event(js, Event(kind="notice", time=datetime.now(UTC), region="r1", partition=PARTITION,
                                               workload="etl", pool="p", instance="i", cause="reclaimed"))
        while len(passes) < 2 and time.monotonic() - t0 < 20:
            await asyncio.sleep(0.01)
        stop.set()
        await task
        await nc.close()
        assert len(passes) >= 2 and passes[1] - t0 < 20.0  # well before the 30 s interval, even under load
        assert ctl.notices["etl"], "the notice feeds the interruption-rate signal"

    asyncio.run(scenario())
    conn.close()


def test_only_the_lease_holder_of_a_partition_acts(pg_migrated_url: str) -> None:
    conns = [psycopg.connect(pg_migrated_url, autocommit=True) for _ in range(2)]
    clock = StepClock()
    region = SimulatedRegion(RegionConfig(reclaim_rate_pct_h=0, hall_reclaims_per_30d=0), clock)
    etl = contract("etl")
    source = FakeSource()
    source.demand(etl.ref, 20)
    a, b = (Controller(ControllerSettings("r1", PARTITION, holder=h, safety=SafetyConfig(recovery_share=Decimal(1))),
                       region, c, source, contracts(etl), clock) for h, c in zip(("a", "b"), conns, strict=True))
    assert a.step().leader and not b.step().leader
    clock.advance(seconds=10)
    assert a.step().leader and not b.step().leader
    clock.advance(seconds=16)  # a stopped renewing: its lease expires and b takes over, read-only first
    report = b.step()
    assert report.leader and report.read_only
    assert not a.step().leader
    clock.advance(seconds=16)  # b stops in turn; a comes back, and a tenure regained starts read-only again
    back = a.step()
    assert back.leader and back.read_only
    for c in conns:
        c.close()
