"""A controller pass at the design scale: 220 workloads on the simulated region's 141 reclaimable pools (plus
committed and guaranteed pools), real embedded PostgreSQL, the in-process region, no token budget (the budget
would spread the launches over minutes; this measures the controller's own cost).

Prints: a read-only pass (list, adopt, claims, plan, diff), the acting pass that launches the whole plan, and a
steady-state pass with nothing to do — the cost a level-triggered controller pays every interval.

    .venv/bin/python -m bench.controller_pass
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import psycopg

from bench._cli import no_arguments, stop_on_signals
from controllers.controller.breaker import SafetyConfig
from controllers.controller.loop import Controller, ControllerSettings
from controllers.simregion.clock import VirtualClock
from controllers.simregion.config import RegionConfig
from controllers.simregion.region import SimulatedRegion
from stores import migrate
from testkit.builders import PARTITION, FakeSource, contract, contracts
from testkit.postgres import PostgresProcess

WORKLOADS = 220


def main() -> None:
    stop_on_signals()  # a timeout's SIGTERM stops the servers this bench starts
    no_arguments("bench.controller_pass", __doc__)
    clock = VirtualClock(datetime(2026, 11, 29, tzinfo=UTC))
    region = SimulatedRegion(RegionConfig(reclaim_rate_pct_h=0, hall_reclaims_per_30d=0, quota_instances=20000,
                                          quota_vcpu=10**7), clock)
    tiers = ["T1", "T2", "T3", "T3", "T5"]
    cs = [contract(f"w{n:03d}", tiers[n % 5], **({"floor_pct": 30} if tiers[n % 5] == "T1" else {}))
          for n in range(WORKLOADS)]
    source = FakeSource()
    for c in cs:
        source.demand(c.ref, 24, prefix=c.workload)
    pg = PostgresProcess().start()
    try:
        conn = psycopg.connect(pg.create_database(), autocommit=True)
        migrate.migrate_postgres(conn)
        ctl = Controller(ControllerSettings("r1", PARTITION, safety=SafetyConfig(recovery_share=Decimal(1))),
                         region, conn, source, contracts(*cs), clock)
        timings = []
        for label in ("read-only pass 1", "read-only pass 2", "acting pass", "steady pass", "steady pass"):
            t0 = time.perf_counter()
            report = ctl.step()
            timings.append((label, time.perf_counter() - t0, report))
            clock.advance(timedelta(seconds=5))
        instances = len(region.list_instances())
        for label, seconds, r in timings:
            print(f"{label:18s} {seconds * 1000:8.0f} ms  launched={r.launched} held={r.held} "
                  f"generation={r.generation}")
        print(f"{WORKLOADS} workloads, {instances} instances, "
              f"{len(ctl.previous.plans) if ctl.previous else 0} plans in force")
    finally:
        pg.close()


if __name__ == "__main__":
    main()
