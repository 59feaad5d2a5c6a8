"""Analytics speed on the embedded ClickHouse (DESIGN §6): ranking 140 pools over 90 days (goal ≤ 5 s), phi
co-reclamation groups over 90 days of ten-minute windows (≤ 10 s), one hour of savings attribution for 5,000
instances (≤ 5 s), and a backfill of 24 hours read as one range (extrapolated to a year; goal ≤ 15 min).
Baselines measured in the same run: the bare ClickHouse scan each job cannot avoid (the
reclaim count over the window; the (pool, window) pairs; the hour's instance spans), so the ratio shows what
the scoring, phi and ledger logic add. Median of 3 rounds.

    .venv/bin/python -m bench.analytics                       # starts ClickHouse, writes 90 d × 140 pools (minutes)
    .venv/bin/python -m bench.analytics --clickhouse URL      # reuse a ClickHouse that already holds the history
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from bench._cli import stop_on_signals
from contracts.pools import Pool, PurchaseModel
from orchestration import backfill, groups, ledger, rankings
from orchestration.catalogue import write_catalogue
from orchestration.resources import ClickHouseResource
from orchestration.store import latest_event_time

START = datetime(2026, 6, 1, tzinfo=UTC)
BENCH_REGION = "rb"
HOUR = datetime(2026, 9, 15, 10, tzinfo=UTC)


def timed(fn: Callable[[], object], rounds: int = 3) -> float:
    samples = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def load_history(url: str, pools: int, days: int) -> None:
    from controllers.simregion.config import RegionConfig
    from controllers.simregion.history import write_history
    from stores.clickhouse import client

    c = client(url)
    try:
        t = time.perf_counter()
        report = write_history(c, RegionConfig(pools=pools), days=days, start=START)
        print(f"history: {report.events:,} events, {report.pools} pools, {days} days "
              f"in {time.perf_counter() - t:.0f} s")
    finally:
        c.close()


def attribution_fixture(ch: ClickHouseResource, instances: int) -> None:
    """``instances`` owned instances of 50 workloads running through HOUR in region rb, 5 % lost with wasted
    work, storage and the orchestrator's cost for the hour."""
    rng = random.Random(7)
    pools = [Pool(pool_id=f"rb-h{h}-std-{s}-rc", region=BENCH_REGION, hall=f"h{h}", aggregate=f"h{h}-agg-a",
                  sku_family="std", size=s, vcpu=8, memory_gib=32, purchase_model=PurchaseModel.RECLAIMABLE,
                  rate_eur_h=Decimal("0.11"), guaranteed_rate_eur_h=Decimal("0.32"))
             for h in (1, 2, 3) for s in ("a", "b", "c", "d", "e", "f")]
    write_catalogue(ch, pools, HOUR - timedelta(days=1))
    cols = ("event_id", "kind", "time", "region", "partition", "pool", "instance", "workload", "contract_version",
            "cause", "drill", "source", "attributes")
    rows = []
    for i in range(instances):
        w = f"w{i % 50:02d}"
        pool = pools[rng.randrange(len(pools))].pool_id
        t0 = HOUR - timedelta(minutes=rng.randrange(0, 600))
        rows.append((str(uuid.uuid4()), "launched", t0, BENCH_REGION, "p", pool, f"i{i}", w, "", "planned", False,
                     "bench", json.dumps({"purpose": "headroom" if i % 40 == 0 else "work"})))
        if i % 10 == 0:
            rows.append((str(uuid.uuid4()), "terminated", HOUR + timedelta(minutes=rng.randrange(1, 59)),
                         BENCH_REGION, "p", pool, f"i{i}", w, "", "reclaimed", False, "bench", "{}"))
        if i % 20 == 0:
            rows.append((str(uuid.uuid4()), "lost", HOUR + timedelta(minutes=30), BENCH_REGION, "p", pool, f"i{i}", w,
                         "", "reclaimed", False, "bench", json.dumps({"wasted_s": rng.randrange(60, 3600)})))
    ch.insert("events", rows, cols)
    ch.insert("storage_usage", [(HOUR, f"w{k:02d}", Decimal(200), Decimal("0.00005")) for k in range(50)],
              ("hour", "workload", "gib_hours", "eur_per_gib_h"))
    ch.insert("orchestrator_usage", [(HOUR, BENCH_REGION, Decimal("4.5"))], ("hour", "region", "cost_eur"))


def run(url: str) -> list[str]:
    """Measures and prints each figure against its goal; the figures over their goal (empty: all met)."""
    ch = ClickHouseResource(url=url)
    ch.migrate()
    now = latest_event_time(ch, "r1")
    if now is None:
        raise SystemExit("no r1 events: run without --clickhouse, or load `sco sim history --days 90 --pools 140`")
    pools = ch.rows("SELECT count() FROM provider_pools FINAL WHERE region = 'r1' AND purchase_model = 'reclaimable'")
    events = ch.rows("SELECT count() FROM events WHERE region = 'r1'")[0][0]
    print(f"data: {pools[0][0]} reclaimable pools, {events:,} events, up to {now:%Y-%m-%d %H:%M}")
    p = {"r": "r1", "t0": now - timedelta(days=30), "t1": now}

    scan = timed(lambda: ch.rows(f"SELECT pool, count() FROM events WHERE region = {{r:String}} AND "
                                 f"{rankings.RECLAIM_FILTER} AND time > {{t0:DateTime64(3)}} AND "
                                 "time <= {t1:DateTime64(3)} GROUP BY pool", p))
    rank = timed(lambda: rankings.rank(ch, "r1", now))
    print(f"ranking ({pools[0][0]} pools, 30-day window): {rank:.2f} s  (goal ≤ 5 s; baseline reclaim-count scan "
          f"{scan:.2f} s, ratio {rank / scan:.1f}x)")

    pairs = timed(lambda: groups.reclaim_windows(ch, "r1", now, 90))
    phi = timed(lambda: groups.compute_groups(ch, "r1", now, 90))
    found = groups.compute_groups(ch, "r1", now, 90)
    print(f"phi groups (90 days, 10-min windows): {phi:.2f} s  (goal ≤ 10 s; baseline window-pair query "
          f"{pairs:.2f} s, ratio {phi / pairs:.1f}x; {len(set(found.group_of.values()))} groups, "
          f"{len(found.changes)} changes)")

    if not ch.rows("SELECT count() FROM events WHERE region = 'rb'")[0][0]:
        attribution_fixture(ch, 5000)
    read = timed(lambda: ledger.read_hour(ch, BENCH_REGION, HOUR))

    def hour() -> list[Any]:
        inputs = ledger.read_hour(ch, BENCH_REGION, HOUR)
        lines = ledger.attribute_hour(inputs)
        ledger.write_hour(ch, BENCH_REGION, inputs, lines)
        return lines

    full = timed(hour)
    lines = hour()
    n = ch.rows("SELECT uniqExact(instance) FROM events WHERE region = 'rb' AND kind = 'launched'")[0][0]
    print(f"attribution (one hour, {n:,} instances, {len(lines)} workloads): {full:.2f} s  (goal ≤ 5 s; baseline "
          f"read only {read:.2f} s, ratio {full / read:.1f}x)")

    hours = 24
    t = time.perf_counter()
    for h in range(hours):
        inputs = ledger.read_hour(ch, BENCH_REGION, HOUR + timedelta(hours=h))
        ledger.write_hour(ch, BENCH_REGION, inputs, ledger.attribute_hour(inputs))
    hourly = time.perf_counter() - t
    t = time.perf_counter()
    backfill.attribute_range(ch, BENCH_REGION, HOUR, HOUR + timedelta(hours=hours))
    ranged = time.perf_counter() - t
    print(f"backfill of {hours} hours × {n:,} instances in one range: {ranged:.2f} s  (baseline hour by hour "
          f"{hourly:.2f} s, {hourly / ranged:.1f}x faster); a year at this rate ≈ {ranged / hours * 8760 / 60:.1f} "
          f"min (goal ≤ 15 min)")
    year_min = ranged / hours * 8760 / 60
    return [f"{name} {figure:.2f} {unit} > {goal:g} {unit}" for name, figure, goal, unit in (
        ("ranking", rank, 5, "s"), ("phi groups", phi, 10, "s"), ("attribution of one hour", full, 5, "s"),
        ("a year's backfill", year_min, 15, "min")) if figure > goal]


def main() -> int:
    stop_on_signals()  # a timeout's SIGTERM stops the servers this bench starts
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--clickhouse", default=None, help="a ClickHouse URL that already holds the 90-day history")
    ap.add_argument("--pools", type=int, default=140)
    ap.add_argument("--days", type=int, default=90)
    args = ap.parse_args()
    if args.clickhouse:
        return verdict(run(args.clickhouse))
    from sco.stack.services import start_clickhouse, stop_pid

    with tempfile.TemporaryDirectory() as tmp:
        server = start_clickhouse(Path(tmp))
        try:
            ClickHouseResource(url=server.url).migrate()
            load_history(server.url, args.pools, args.days)
            misses = run(server.url)
        finally:
            stop_pid(server.pid)
    return verdict(misses)


def verdict(misses: list[str]) -> int:
    """A FAIL line per figure over its goal and exit 1, or one PASS line."""
    for miss in misses:
        print(f"FAIL  {miss}")
    if not misses:
        print("PASS  every figure within its goal")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
