"""The orchestrator's own cost per hour (ADR-26), from the samples its processes write (``stores.footprint``):
per process, the CPU seconds it used in the hour (its cumulative counter at the hour's last sample minus at the
sample before the hour began, or the hour's first when it started inside the hour) and its resident memory
over the time covered, priced at the guaranteed rate card per vCPU-hour and per GiB-hour. The hourly
``orchestrator_usage`` asset writes the total; the attribution shares it pro rata to instance-hours.

A process restarted inside the hour is a new process (its own counter from zero), so nothing is lost or
counted twice; a process that wrote no sample in the hour cost nothing that hour.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from .store import Postgres

__all__ = ["GIB", "HourFootprint", "hour_footprint", "read_samples"]

GIB = 1024 ** 3
Row = tuple[str, str, datetime, float, int]  # process, component, sampled_at, cpu_s, rss_bytes


@dataclass(frozen=True)
class HourFootprint:
    """One hour of the orchestrator: CPU-hours and GiB-hours per component, and the cost."""

    cpu_h: dict[str, float]
    gib_h: dict[str, float]
    cost_eur: Decimal


def hour_footprint(rows: Iterable[Row], hour: datetime, eur_per_vcpu_h: Decimal,
                   eur_per_gib_h: Decimal) -> HourFootprint:
    """The hour [hour, hour + 1 h) from samples of it and the last sample of each process before it."""
    end = hour + timedelta(hours=1)
    by_process: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_process[r[0]].append(r)
    cpu: dict[str, float] = defaultdict(float)
    mem: dict[str, float] = defaultdict(float)
    for samples in by_process.values():
        samples.sort(key=lambda r: r[2])
        before = [r for r in samples if r[2] < hour]
        inside = [r for r in samples if hour <= r[2] < end]
        if not inside:
            continue
        base = before[-1] if before else inside[0]
        component = inside[-1][1]
        cpu[component] += max(0.0, inside[-1][3] - base[3]) / 3600
        points = [base, *inside] if before else inside
        for a, b in itertools.pairwise(points):
            span = (b[2] - max(a[2], hour)).total_seconds()
            mem[component] += max(0.0, span) / 3600 * (a[4] + b[4]) / 2 / GIB
    cost = sum((Decimal(str(h)) * eur_per_vcpu_h for h in cpu.values()), Decimal(0)) + \
        sum((Decimal(str(g)) * eur_per_gib_h for g in mem.values()), Decimal(0))
    return HourFootprint(dict(cpu), dict(mem), cost.quantize(Decimal("0.000001")))


def read_samples(pg: Postgres, region: str, hour: datetime) -> list[Row]:
    """The hour's samples and, per process, the last one before it (within a day)."""
    end = hour + timedelta(hours=1)
    with pg.connection() as conn:
        rows: list[Any] = conn.execute(
            "SELECT process, component, sampled_at, cpu_s, rss_bytes FROM process_usage "
            "WHERE region = %s AND sampled_at >= %s AND sampled_at < %s "
            "UNION ALL (SELECT DISTINCT ON (process) process, component, sampled_at, cpu_s, rss_bytes "
            "FROM process_usage WHERE region = %s AND sampled_at < %s AND sampled_at >= %s "
            "ORDER BY process, sampled_at DESC)",
            (region, hour, end, region, hour, hour - timedelta(days=1))).fetchall()
    return [(str(p), str(c), t, float(cpu), int(rss)) for p, c, t, cpu, rss in rows]
