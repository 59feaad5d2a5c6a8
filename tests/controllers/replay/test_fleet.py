"""The fleet-scale simulation (issue 18) at a few hundred instances: one production controller process per
partition against the simulated region's API, the region's token budget split statically between them (a bucket
each), the fleet built, then steady arrivals, then one hall-wide reclaim. Real PostgreSQL; the region's notices to
a real 3-member NATS cluster."""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

import pytest

from contracts.pools import PurchaseModel
from contracts.subjects import notice_subject
from controllers.replay.fleet import FleetPlan, FleetSim
from sco.commands.simulate_controller import production_ranker
from testkit.nats import NatsCluster

PLAN = FleetPlan(instances=240, partitions=3, per_workload=12, fill_s=120.0, growth_per_h=3.0, steady_s=60.0,
                 after_s=600.0, settle_s=60.0)


class Listener:
    """One real subscriber connection per sampled notice subject, in a thread of its own."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.got: set[str] = set()
        self.subjects: set[str] = set()
        self.done = False
        self.ready = threading.Event()

    def subscribe(self, ours: list[str]) -> None:
        self.subjects = {notice_subject("r1", i) for i in ours[:20]}
        self.thread = threading.Thread(target=asyncio.run, args=(self._run(),), daemon=True)
        self.thread.start()
        assert self.ready.wait(30)

    async def _run(self) -> None:
        from stores.nats import connect

        nc = await connect(self.url)

        async def on_msg(msg: Any) -> None:
            self.got.add(msg.subject)

        for s in self.subjects:
            await nc.subscribe(s, cb=on_msg)
        await nc.flush()
        self.ready.set()
        for _ in range(300):
            if self.got == self.subjects or self.done:
                break
            await asyncio.sleep(0.1)
        await nc.close()


@pytest.mark.slow
def test_one_controller_process_per_partition_builds_the_fleet_on_its_share_of_the_budget_and_restores_the_hall(
        pg_migrated_url: str, nats_cluster: NatsCluster) -> None:
    import psycopg

    listener = Listener(nats_cluster.url)
    with psycopg.connect(pg_migrated_url, autocommit=True) as conn:
        sim = FleetSim(PLAN, pg_migrated_url, nats_url=nats_cluster.url, ranker=production_ranker(conn, "r1"),
                       before_reclaim=listener.subscribe)
        f = sim.figures()
    listener.done = True
    listener.thread.join(timeout=30)
    # one controller process per partition, none of them this one
    assert len(set(f.processes)) == PLAN.partitions and os.getpid() not in f.processes
    # every process drew from its own share, the region never more than its rate plus the banked bursts
    assert all(f.spent_by_process) and sum(f.spent_by_process) == f.budget_spent
    assert f.budget_spent <= PLAN.budget_rate * (PLAN.pass_interval_s + f.virtual_s)
    # the build first (every build claim placed), then the steady claims, then the reclaim
    assert f.build_placed and 0 < f.build_s < f.reclaim_s == pytest.approx(f.build_s + PLAN.steady_s, abs=1e-6)
    assert f.build_calls + f.steady_calls + f.after_calls == f.budget_spent and f.built > 0
    assert f.steady_claims == len([a for a in sim.arrivals if a[3]]) > 0
    assert min(a[0] for a in sim.arrivals if a[3]) >= f.build_s
    # the clock rule: each round moved the virtual clock by max(pass interval, the slowest pass's wall time)
    # (plus the idle passes skipped in the steady phase, whole intervals)
    assert f.virtual_s == pytest.approx(sum(max(PLAN.pass_interval_s, w) for w in f.round_wall_s) + f.skipped_s,
                                        abs=1e-3)
    assert f.skipped_s % PLAN.pass_interval_s == pytest.approx(0.0, abs=1e-6)
    assert f.pass_wall_s and len(f.pass_wall_s) == f.rounds * PLAN.partitions
    # every claim placed, each unit's latency at least its first pass's and within the run
    assert f.unplaced_units == 0 and len(f.placement_s) == sum(a[2] for a in sim.arrivals)
    assert f.steady_s and len(f.steady_s) == sum(a[2] for a in sim.arrivals if a[3])
    assert min(f.placement_s) > 0 and max(f.placement_s) < f.virtual_s
    # the hall reclaim: ours noticed, what it took below the claims replaced — all but what the two halls left have
    # no room for (a genuine shortfall, at most a quarter here); in the hall, nothing of ours not under notice
    # (the hall lends nothing: no launch there after the reclaim)
    assert f.hall_reclaimed > 0 and f.replacement_s and f.unreplaced_units <= len(f.replacement_s) / 4
    engine = sim.region.engine
    assert not [x for i, s in enumerate(engine.specs) if s.pool.hall == PLAN.hall
                and s.pool.purchase_model is PurchaseModel.RECLAIMABLE for x in engine.live[i].values()
                if x.owned and not x.doomed]
    assert f.floor_workloads > 0 and f.floor_restored == f.floor_workloads and f.floor_restored_s is not None
    # the region published every notice to the cluster; the subscribers on it got theirs
    assert f.notices_published >= len(sim.noticed) > 0
    assert listener.got == listener.subjects & {notice_subject("r1", i) for i in sim.noticed} != set()
