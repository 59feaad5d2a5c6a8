"""Rebuild fleet state from provider tags (ADR-11): with an empty (migrated) database, list every instance in
the orchestrator's projects, read the owner tags and write one row per instance — workload, pool, partition,
plan generation, purpose. Untagged instances are reported, never adopted. Plans are then recomputed by the
controller's first passes from contracts and rankings, and it acts only after its two read-only cycles
(``Safety`` starts read-only in every new process)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from contracts.provider import Provider

from .observe import observe

__all__ = ["RebuildReport", "ownership", "rebuild"]


@dataclass(frozen=True)
class RebuildReport:
    instances: int
    untagged: int
    partitions: dict[str, int]
    seconds: float


def rebuild(provider: Provider, conn: Any, now: datetime, *, batch: int = 1000) -> RebuildReport:
    """Rebuild the instances table from the provider's owner tags; what was found."""
    import time

    t0 = time.perf_counter()
    listed = provider.list_instances()
    observed = observe(listed)
    region = provider.region
    rows = [(o.instance_id, region, o.partition, o.pool, o.workload, o.generation,
             {"notified": "draining"}.get(o.status, "running"),
             "reclaimable" if o.purpose == "reclaimable" else "guaranteed",
             json.dumps({"workload": o.workload, "pool": o.pool, "partition": o.partition, "generation": o.generation}),
             o.launched_at or now, str(o.purpose), o.hall, o.name) for o in observed]
    with conn.transaction(), conn.cursor() as cur:
        for i in range(0, len(rows), batch):
            cur.executemany(
                "INSERT INTO instances (instance_id, region, partition, pool, workload, plan_generation, state, "
                "purchase_model, provider_tags, launched_at, purpose, hall, name) VALUES "
                "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (instance_id) DO UPDATE SET "
                "partition = excluded.partition, pool = excluded.pool, workload = excluded.workload, "
                "plan_generation = excluded.plan_generation, purpose = excluded.purpose", rows[i:i + batch])
        if observed:
            # plan generations continue from the highest generation seen on the instances
            for part, gen in {o.partition: max(x.generation for x in observed if x.partition == o.partition)
                              for o in observed}.items():
                cur.execute("INSERT INTO plans (workload, generation, region, partition, plan, in_force) VALUES "
                            "('_rebuild', %s, %s, %s, '{}'::jsonb, false) ON CONFLICT DO NOTHING",
                            (max(gen, 1), region, part))
    return RebuildReport(len(observed), len(listed) - len(observed), dict(Counter(o.partition for o in observed)),
                         time.perf_counter() - t0)


def ownership(conn: Any, region: str) -> set[tuple[str, str, str, str, int]]:
    """(instance, workload, pool, partition, generation) of every row not terminated — what a rebuild restores."""
    with conn.transaction():
        return {(r[0], r[1], r[2], r[3], int(r[4])) for r in conn.execute(
            "SELECT instance_id, workload, pool, partition, plan_generation FROM instances WHERE region = %s AND "
            "state NOT IN ('terminated', 'lost')", (region,))}
