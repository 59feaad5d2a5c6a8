"""Rebuild of fleet state from provider tags (DESIGN §6: 5,000 instances ≤ 30 s).

Launches 5,000 tagged instances in the simulated region (in process), then rebuilds an empty, migrated
PostgreSQL (embedded) from the tags and checks that the rebuilt ownership equals what was launched. Prints the
listing and the write times; the baseline is the same rows written one INSERT per instance.

    .venv/bin/python -m bench.controller_rebuild
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime

import psycopg

from bench._cli import no_arguments, stop_on_signals
from contracts.pools import PurchaseModel
from contracts.provider import LaunchRequest, OwnerTags
from controllers.controller.rebuild import ownership, rebuild
from controllers.simregion.clock import VirtualClock
from controllers.simregion.config import RegionConfig
from controllers.simregion.region import SimulatedRegion
from stores import migrate
from testkit.postgres import PostgresProcess

N = 5000


GOAL_S = 30.0  # DESIGN §6: 5,000 instances rebuilt from their tags within 30 s


def main() -> int:
    stop_on_signals()  # a timeout's SIGTERM stops the servers this bench starts
    no_arguments("bench.controller_rebuild", __doc__)
    clock = VirtualClock(datetime(2026, 11, 29, tzinfo=UTC))
    region = SimulatedRegion(RegionConfig(reclaim_rate_pct_h=0, hall_reclaims_per_30d=0, background=False,
                                          quota_instances=N + 10, quota_vcpu=10**7), clock)
    pools = [p for p in region.catalogue().pools if p.purchase_model is not PurchaseModel.COMMITTED and not p.gpu]
    free = {e.pool_id: e.free_instances for e in region.rate_card().entries}
    launched = 0
    n = 0
    while launched < N:
        p = pools[n % len(pools)]
        count = min(10, N - launched, free.get(p.pool_id, 200))
        free[p.pool_id] = free.get(p.pool_id, 200) - count
        n += 1
        if count <= 0:
            continue
        region.launch(LaunchRequest(pool_id=p.pool_id, count=count, metadata={"sco_purpose": "fallback"},
                                    owner=OwnerTags(
            workload=f"w{n % 220:03d}", pool=p.pool_id, partition=f"r1/cluster-{n % 3}", generation=1 + n % 7)))
        launched += count
    pg = PostgresProcess().start()
    try:
        conn = psycopg.connect(pg.create_database(), autocommit=True)
        migrate.migrate_postgres(conn)
        t0 = time.perf_counter()
        report = rebuild(region, conn, clock.now())
        total = time.perf_counter() - t0
        rows = ownership(conn, "r1")
        expected = {(i.instance_id, i.owner.workload, i.owner.pool, i.owner.partition, i.owner.generation)
                    for i in region.list_instances() if i.owner}
        assert rows == expected and len(rows) == N, (len(rows), N)
        met = total <= GOAL_S
        print(f"rebuild of {report.instances} instances from tags: {total:.2f} s "
              f"({report.instances / total:,.0f} instances/s; goal <= {GOAL_S:g} s: {'PASS' if met else 'FAIL'}); "
              f"ownership identical: {rows == expected}")
        conn2 = psycopg.connect(pg.create_database(), autocommit=True)
        migrate.migrate_postgres(conn2)
        t1 = time.perf_counter()
        for o in region.list_instances()[:500]:
            with conn2.transaction():
                conn2.execute("INSERT INTO instances (instance_id, region, partition, pool) VALUES (%s, 'r1', %s, %s)",
                              (o.instance_id, o.owner.partition if o.owner else "", o.pool_id))
        per_row = (time.perf_counter() - t1) / 500
        print(f"baseline (one transaction per row): {per_row * N:.2f} s for {N} (extrapolated from 500); "
              f"ratio {per_row * N / total:.1f}x")
    finally:
        pg.close()
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
