"""A recorded history replayed through the production controller (ADR-03's report, issue 19 "one code path"):
the history is a trace of the simulated region (as ``sco contracts report`` reads one from ClickHouse), the region
a ``TraceRegion``, and one production controller per partition runs on a real PostgreSQL with the production
scorer. The claims are placed in the history's pools, the history's waves interrupt them and are charged, and on
a quiet history the trace region and the simulated region it was recorded from give the same placements."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import psycopg
import pytest

from controllers.planning import Strategy
from controllers.replay import WorkloadOutcome
from controllers.replay.from_region import trace_from_region
from controllers.replay.through_controller import replay_through_controller
from controllers.replay.trace import Trace
from controllers.replay.trace_region import replay_trace_through_controller
from controllers.simregion.config import RegionConfig
from sco.commands.simulate_controller import production_ranker
from stores import migrate
from testkit.builders import contract
from testkit.postgres import PostgresProcess

START = datetime(2026, 10, 1, 12, tzinfo=UTC)
ETL = contract("etl", "T3")
TRAIN = contract("train", "T2", vcpu=8, mem=32)
UNITS = {"etl": 20, "train": 12}
HOURS, WARMUP_DAYS = 3.0, 0.25
BUSY = RegionConfig(seed=2, pools=24, reclaim_rate_pct_h=20.0, no_notice_share=0.3, hall_reclaims_per_30d=0.0)
QUIET = RegionConfig(seed=2, pools=24, reclaim_rate_pct_h=0.0, hall_reclaims_per_30d=0.0,
                     bursts_per_aggregate_day=0.0)

pytestmark = pytest.mark.slow


def _replay(conn: Any, trace: Trace, diagnostics: dict[str, int] | None = None) -> dict[str, WorkloadOutcome]:
    return replay_trace_through_controller(trace, {c.ref: c for c in (ETL, TRAIN)}, UNITS, conn,
                                           strategy=Strategy.DEPTH_FIRST, ranker=production_ranker(conn, "r1"),
                                           diagnostics=diagnostics)


def _payloads(conn: Any) -> list[dict[str, Any]]:
    return [json.loads(bytes(r[0])) for r in conn.execute("SELECT payload FROM outbox ORDER BY id").fetchall()]


def test_a_recorded_history_is_placed_interrupted_and_charged_through_the_production_controller(conn: Any) -> None:
    trace = trace_from_region(BUSY, START, HOURS / 24, WARMUP_DAYS)
    diagnostics: dict[str, int] = {}
    out = _replay(conn, trace, diagnostics)
    assert set(out) == {"etl", "train"} and diagnostics["placed"] > 0
    history_pools = {p.pool_id for p in trace.pools}
    placed = {r[0] for r in conn.execute("SELECT DISTINCT pool FROM instances").fetchall()}
    assert placed and placed <= history_pools
    for o in out.values():   # placed; short a little while replacements of the waves' victims launch (20 %/h)
        assert o.unit_hours_wanted == UNITS[o.workload] * HOURS
        assert o.reclaimable_s > 0 and o.shortfall_unit_hours <= 0.05 * o.unit_hours_wanted
    # the history's waves took instances of ours: each is an interruption, and the controller saw the losses
    interruptions = sum(o.interruptions for o in out.values())
    lost_rows = conn.execute("SELECT count(*) FROM instances WHERE state = 'lost'").fetchone()[0]
    assert interruptions > 0 and interruptions - 6 <= lost_rows <= interruptions
    no_notice = [e for e in _payloads(conn) if e["kind"] == "lost"]
    assert sum(o.no_notice_losses for o in out.values()) == len(no_notice) > 0, "30 % of the waves' victims"
    assert out["etl"].wasted_s > 0, "etl keeps no checkpoint: a loss redoes work"
    assert all(o.reclaimable_cost > 0 and o.counterfactual > 0 for o in out.values())


def test_on_a_quiet_history_the_trace_region_places_as_the_region_it_was_recorded_from(
        pg_migrated_url: str, postgres_server: PostgresProcess) -> None:
    """No waves, so both regions lend the same room on the same cards at the same prices: the same scorer,
    planner and controller place the same units. Tolerance: the trace region lends a pool the room its last card
    showed (refreshed every 5 min), the simulated region the room at the instant (10 % of instance-hours)."""
    trace = trace_from_region(QUIET, START, HOURS / 24, WARMUP_DAYS)
    with psycopg.connect(pg_migrated_url, autocommit=True) as a:
        ours = _replay(a, trace)
    other = postgres_server.create_database()
    with psycopg.connect(other, autocommit=True) as b:
        migrate.migrate_postgres(b)
        region = replay_through_controller(QUIET, START, HOURS / 24, {c.ref: c for c in (ETL, TRAIN)}, UNITS, b,
                                           strategy=Strategy.DEPTH_FIRST, warmup_days=WARMUP_DAYS,
                                           ranker=production_ranker(b, "r1"))
    for name in UNITS:
        x, y = ours[name], region[name]
        assert x.interruptions == y.interruptions == 0
        assert x.shortfall_s == y.shortfall_s, "the same two read-only passes, nothing else unplaced"
        assert abs(x.instance_s - y.instance_s) <= 0.10 * y.instance_s
        assert abs(x.cost - y.cost) <= Decimal("0.10") * y.cost
    assert trace.end == START + timedelta(hours=HOURS)
