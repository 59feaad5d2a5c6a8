"""The orchestrator's own cost collected from its processes (ADR-26): each long-running process samples its CPU
seconds and memory into PostgreSQL (``stores.footprint``), the hourly ``orchestrator_usage`` asset prices an
hour of samples, and the attribution shares it. The pure hour rule runs on hand-made samples."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from orchestration.footprint import GIB, hour_footprint
from stores.footprint import Sample, Sampler

from .helpers import Stack

H = datetime(2026, 9, 1, 7, tzinfo=UTC)


def test_an_hour_costs_the_cpu_each_process_used_in_it_and_its_memory_over_the_time_covered() -> None:
    m = timedelta(minutes=1)
    rows = [("ctl:1", "controller", H - 2 * m, 100.0, GIB),       # the sample before the hour: the baseline
            ("ctl:1", "controller", H + 30 * m, 280.0, GIB),
            ("ctl:1", "controller", H + 60 * m, 999.0, GIB),      # the next hour's: not this one's
            ("ing:2", "ingest", H + 20 * m, 5.0, 2 * GIB),        # started inside the hour: from its first sample
            ("ing:2", "ingest", H + 50 * m, 365.0, 2 * GIB),
            ("old:3", "controller", H - 30 * m, 50.0, GIB)]       # stopped before the hour: nothing
    fp = hour_footprint(rows, H, Decimal("0.04"), Decimal("0.005"))
    assert fp.cpu_h == {"controller": 0.05, "ingest": 0.1}     # 180 s and 360 s
    assert fp.gib_h["controller"] == 0.5 and fp.gib_h["ingest"] == 1.0  # 30 min × 1 GiB, 30 min × 2 GiB
    assert fp.cost_eur == Decimal("0.0135")  # 0.15 vCPU-h × 0.04 + 1.5 GiB-h × 0.005


def test_samples_written_by_a_process_become_the_hours_orchestrator_cost_in_the_ledger(stack: Stack) -> None:
    from dagster import materialize

    from orchestration.backfill import read_range
    from orchestration.defs.costs.assets import orchestrator_usage
    from orchestration.resources import AnalyticsSettings
    from stores.postgres import connect

    region = f"rfp{uuid.uuid4().hex[:6]}"  # this test's own region: the session's stores are shared
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    times = iter([hour - timedelta(minutes=1), hour + timedelta(minutes=20), hour + timedelta(minutes=40)])
    used = iter([Sample(10.0, GIB), Sample(46.0, GIB), Sample(82.0, GIB)])  # 72 CPU-s in the hour
    sampler = Sampler(lambda: connect(stack.postgres_url, autocommit=True), region, "controller",
                      interval_s=0.01, now=lambda: next(times), usage=lambda: next(used))
    assert all(sampler.sample() for _ in range(3))  # three ticks, driven by hand
    sampler.close()
    result = materialize([orchestrator_usage], partition_key=hour.strftime("%Y-%m-%d-%H:%M"), resources={
        **stack.resources(), "settings": AnalyticsSettings(region=region)})
    assert result.success
    ch = stack.ch()
    ((cost,),) = ch.rows("SELECT cost_eur FROM orchestrator_usage FINAL WHERE region = {r:String}", {"r": region})
    # 72 s = 0.02 vCPU-h × 0.04 + 40 min × 1 GiB × 0.005
    assert Decimal(cost) == (Decimal("0.02") * Decimal("0.04") + Decimal(40) / 60 * Decimal("0.005")).quantize(
        Decimal("0.000001"))
    (inputs,) = read_range(ch, region, hour, hour + timedelta(hours=1))
    assert inputs.orchestrator_eur == Decimal(cost)  # what the attribution shares among the hour's workloads


def test_a_running_process_samples_itself_until_stopped(stack: Stack) -> None:
    from stores.footprint import start
    from stores.postgres import connect
    from tests.support.wait import wait_for

    region = f"rfp{uuid.uuid4().hex[:6]}"
    sampler = start(stack.postgres_url, region, "exclusion-watcher", interval_s=0.05)
    wait_for(lambda: sampler.samples >= 2, timeout=60, what="two footprint samples")
    sampler.stop()
    with connect(stack.postgres_url) as conn:
        rows = conn.execute("SELECT component, cpu_s, rss_bytes FROM process_usage WHERE region = %s "
                            "ORDER BY sampled_at", (region,)).fetchall()
    assert len(rows) >= 3 and {r[0] for r in rows} == {"exclusion-watcher"}
    assert rows[-1][1] >= rows[0][1] > 0 and all(r[2] > 1024 * 1024 for r in rows)  # cumulative CPU, real RSS
