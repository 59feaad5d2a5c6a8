"""Benchmark: `sco sim history --days 90 --pools 140` — the simulated region's pool history into ClickHouse.

Baseline measured in the same run: the engine alone for the same 90 days (no rows, no inserts), so the
ratio shows what building and inserting rows costs. Also prints the simulated speed (virtual days per wall
second) and the rows written. ClickHouse is chDB in process unless --clickhouse gives a URL.

    .venv/bin/python -m bench.sim_history [--days 90] [--pools 140] [--clickhouse URL]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.sim_history")
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--pools", type=int, default=140)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--clickhouse", default=None)
    args = parser.parse_args()

    from controllers.simregion.config import RegionConfig
    from controllers.simregion.engine import RegionEngine
    from controllers.simregion.history import write_history
    from stores import clickhouse
    from stores.migrate import migrate_clickhouse

    config = RegionConfig(seed=args.seed, pools=args.pools)
    start = datetime(2026, 1, 1, tzinfo=UTC)

    t0, c0 = time.perf_counter(), time.process_time()
    engine = RegionEngine(config, start)
    engine.run_until(args.days * 86400.0)
    baseline, baseline_cpu = time.perf_counter() - t0, time.process_time() - c0

    with tempfile.TemporaryDirectory() as tmp:
        url = args.clickhouse or f"chdb://{Path(tmp) / 'ch'}"
        client = clickhouse.client(url)
        migrate_clickhouse(client)
        t0, c0 = time.perf_counter(), time.process_time()
        report = write_history(client, config, days=args.days, start=start)
        elapsed, elapsed_cpu = time.perf_counter() - t0, time.process_time() - c0
        t0 = time.perf_counter()
        counted = client.query("SELECT count() FROM events").result_rows[0][0]
        rates = client.query("SELECT count() FROM rate_cards").result_rows[0][0]
        query_s = time.perf_counter() - t0
        client.command("OPTIMIZE TABLE events FINAL")   # the parts as background merges leave them
        disk, raw, parts = client.query(
            "SELECT sum(bytes_on_disk), sum(data_uncompressed_bytes), count() FROM system.parts "
            "WHERE active AND database = currentDatabase() AND table = 'events'").result_rows[0]

    print(f"sim history: {args.days} days x {report.pools} pools -> {report.events:,} events + "
          f"{report.rate_card_rows:,} rate-card rows in {elapsed:.1f} s "
          f"({(report.events + report.rate_card_rows) / elapsed:,.0f} rows/s; CPU {elapsed_cpu:.1f} s) "
          f"[{url.split(':')[0]}]")
    print(f"baseline (engine only, same days): {baseline:.1f} s (CPU {baseline_cpu:.1f} s) = "
          f"{args.days / baseline:.1f} simulated days/s; history/baseline = {elapsed / baseline:.2f}x")
    print(f"machine load while measuring: {os.getloadavg()[0]:.1f} (1-min load average)")
    print(f"reclaims {report.reclaimed:,} ({report.reclaim_rate_pct_h:.2f} %/h); read back {counted:,} events, "
          f"{rates:,} rate-card rows in {query_s * 1000:.0f} ms")
    if counted:
        print(f"events table after OPTIMIZE FINAL: {disk:,} bytes on disk in {parts} parts = {disk / counted:.1f} "
              f"bytes/event compressed ({raw / counted:.1f} uncompressed, {raw / max(disk, 1):.1f}x) — the "
              f"ClickHouse sizing figure in docs/scaling.md")


if __name__ == "__main__":
    main()
