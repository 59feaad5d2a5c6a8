"""The replay through the production controller (issue 19): the simulated region on a virtual clock, one
production controller per partition on a real PostgreSQL, the production scorer publishing the ranking in force.
A short trace with many reclaims (20 %/h, 30 % without notice) shows the claims placed, the region's reclaims
seen and charged; a quiet trace shows the two engines agree where they model the same thing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from controllers.controller.store import open_breakers
from controllers.planning import Caps, Strategy, units_per_instance
from controllers.replay import ReplayConfig, WorkloadOutcome, replay
from controllers.replay.from_region import trace_from_region
from controllers.replay.through_controller import operator_resets, replay_through_controller
from controllers.simregion.config import RegionConfig
from controllers.simregion.topology import build_pools
from sco.commands.simulate_controller import production_ranker
from testkit.builders import contract

START = datetime(2026, 10, 1, 12, tzinfo=UTC)   # the afternoon: the region's demand peak, its reclaims
ETL = contract("etl", "T3")                      # no checkpoint, 60-min units: a loss redoes work
TRAIN = contract("train", "T2", vcpu=8, mem=32)  # final checkpoint on notice: a noticed loss redoes none
UNITS = {"etl": 20, "train": 12}
BUSY = RegionConfig(seed=2, pools=24, reclaim_rate_pct_h=20.0, no_notice_share=0.3, hall_reclaims_per_30d=0.0)
QUIET = RegionConfig(seed=2, pools=24, reclaim_rate_pct_h=0.0, hall_reclaims_per_30d=0.0,
                     bursts_per_aggregate_day=0.0)


def _through_controller(conn: Any, config: RegionConfig, hours: float,
                        diagnostics: dict[str, int] | None = None, caps: Caps | None = None
                        ) -> dict[str, WorkloadOutcome]:
    return replay_through_controller(config, START, hours / 24, {c.ref: c for c in (ETL, TRAIN)}, UNITS, conn,
                                     strategy=Strategy.DEPTH_FIRST, warmup_days=0.25,
                                     ranker=production_ranker(conn, config.region), diagnostics=diagnostics,
                                     caps=caps)


def _events(conn: Any, kind: str) -> list[dict[str, Any]]:
    rows = conn.execute("SELECT payload FROM outbox ORDER BY id").fetchall()
    return [e for e in (json.loads(bytes(r[0])) for r in rows) if e["kind"] == kind]


@pytest.mark.slow
def test_the_controller_engine_places_the_claims_sees_the_regions_reclaims_and_charges_no_notice_losses(
        conn: Any) -> None:
    diagnostics: dict[str, int] = {}
    out = _through_controller(conn, BUSY, 4.0, diagnostics)
    etl, train = out["etl"], out["train"]
    for o in (etl, train):   # placed: short only while the controller's first two passes read (ADR-12)
        assert o.unit_hours_wanted == UNITS[o.workload] * 4
        assert o.shortfall_unit_hours <= UNITS[o.workload] * 3 / 60 + 1e-9
    assert diagnostics["placed"] > 0 and conn.execute(
        "SELECT count(*) FROM plans WHERE in_force AND workload IN ('etl', 'train')").fetchone()[0] == 2
    # the region's reclaims, as the controller saw them: every reclaimed instance left the listing and the
    # controller marked its row lost (those reclaimed in the last notice window may still be draining)
    interruptions = etl.interruptions + train.interruptions
    lost_rows = conn.execute("SELECT count(*) FROM instances WHERE state = 'lost'").fetchone()[0]
    assert interruptions > 0 and interruptions - 6 <= lost_rows <= interruptions
    # no-notice losses: counted from the region, charged from the controller's own `lost` events
    no_notice = _events(conn, "lost")
    assert etl.no_notice_losses + train.no_notice_losses == len(no_notice) > 0
    assert all(e["cause"] == "reclaimed-no-notice" and e["attributes"]["wasted_s"] >= 0 for e in no_notice)
    etl_no_notice = [e for e in no_notice if e["workload"] == "etl"]
    assert etl_no_notice and etl.wasted_s >= sum(e["attributes"]["wasted_s"] for e in etl_no_notice) > 0
    # train writes a final checkpoint on notice: its wasted work is exactly its no-notice losses', unit-seconds
    # (the controller's wasted_s is one unit's lost work; the instance held k units)
    pools = {s.pool.pool_id: s.pool for s in build_pools(BUSY.region, BUSY.pools)}
    assert train.interruptions > train.no_notice_losses   # some noticed losses, which cost train nothing
    assert train.wasted_s == sum(e["attributes"]["wasted_s"] * units_per_instance(pools[e["pool"]], TRAIN)
                                 for e in no_notice if e["workload"] == "train")
    # the exclusion watcher saw the controller's and the region's events (the busy region trips it)
    assert conn.execute("SELECT count(*) FROM exclusions").fetchone()[0] == diagnostics.get("excluded", 0)
    # the worst step is traced: its losses per pool add up to the worst step's units, in pools it held
    for o in (etl, train):
        step = o.worst_step
        assert step is not None and min(step.units_lost, o.units) == o.worst_step_loss_units > 0
        assert START <= step.at <= START + timedelta(hours=4) and step.at.minute % 5 == 0
        assert step.held and set(step.lost) <= set(step.held) | set(pools)
        assert any(step.held.get(p, 0) > 0 for p in step.lost)


@pytest.mark.slow
def test_on_a_quiet_trace_the_controller_engine_agrees_with_the_replay_model(conn: Any) -> None:
    """Nothing is reclaimed, so both engines place the same claims with the same planner on the same rate cards.
    Tolerances: the controller's first two passes only read (2 min unplaced of 240); the instance-hours and cost
    differ only by pool choice (the replay model ranks from the forward calendar, the controller from the
    production scorer: the same caps, other pools), bounded at 10 %."""
    hours = 4.0
    ours = _through_controller(conn, QUIET, hours)
    trace = trace_from_region(QUIET, START, hours / 24, warmup_days=0.25)
    model = replay(trace, [ETL, TRAIN], UNITS, ReplayConfig(strategy=Strategy.DEPTH_FIRST))
    for name in UNITS:
        a, b = ours[name], model[name]
        assert a.interruptions == b.interruptions == 0 and a.wasted_s == b.wasted_s == 0
        assert b.shortfall_s == 0 and a.shortfall_s <= 3 * 60 * UNITS[name]
        assert abs(a.instance_s - b.instance_s) <= 0.10 * b.instance_s
        assert abs(a.cost - b.cost) <= Decimal("0.10") * b.cost
        assert abs(a.net_saving - b.net_saving) <= Decimal("0.10") * abs(b.counterfactual)


def _reclaimable_units(conn: Any) -> dict[str, dict[str, int]]:
    """Each in-force plan's reclaimable units by pool, as the controller stored it."""
    rows = conn.execute("SELECT workload, plan::text FROM plans WHERE in_force AND workload IN ('etl', 'train')")
    return {w: {a["pool"]: a["units"] for a in json.loads(p)["allocations"] if a["purpose"] == "reclaimable"}
            for w, p in rows}


@pytest.mark.slow
@pytest.mark.parametrize("lifted", [False, True], ids=["adr-06-caps", "caps-lifted"])
def test_the_controller_engine_plans_under_the_caps_it_is_given(conn: Any, lifted: bool) -> None:
    """ADR-06's caps by default (at least eight pools, at most 15 % of the units in one); the diagnostic that lifts
    them (why single-cheapest is interrupted less on the mean) reaches the production planner: fewer pools, and
    a pool holding more than the cap would let it."""
    caps = Caps(pool_share=Decimal(1), group_share=Decimal(1), hall_share=Decimal(1), min_pools=1) if lifted else None
    out = _through_controller(conn, QUIET, 0.5, caps=caps)
    plans = _reclaimable_units(conn)
    assert set(plans) == {"etl", "train"} and all(o.unit_hours_wanted for o in out.values())
    for workload, units in plans.items():
        biggest = max(units.values()) / sum(units.values())
        if lifted:
            assert len(units) < 8 and biggest > 0.15, (workload, units)
        else:
            assert len(units) >= 8 and biggest <= 0.15, (workload, units)


def _trip(conn: Any, partition: str, at: datetime) -> None:
    conn.execute("INSERT INTO breakers (region, partition, name, state, reason, tripped_at, updated_at) VALUES "
                 "('r1', %s, 'termination', 'open', 'mass termination', %s, now())", (partition, at))


@pytest.mark.parametrize(("after", "closed"), [
    pytest.param(timedelta(minutes=30), {"late"}, id="a page answered 30 min after the trip"),
    pytest.param(None, set(), id="nobody on call: every breaker stays open"),
])
def test_the_replays_operator_resets_a_breaker_only_once_it_has_been_open_long_enough(
        conn: Any, after: timedelta | None, closed: set[str]) -> None:
    now = START + timedelta(hours=3)
    _trip(conn, "late", now - timedelta(minutes=30))
    _trip(conn, "fresh", now - timedelta(minutes=29))
    assert operator_resets(conn, "r1", now, after) == len(closed)
    assert set(open_breakers(conn, "r1")) == {"late", "fresh"} - closed
    reasons = [r[0] for r in conn.execute("SELECT reason FROM breakers WHERE state = 'closed'")]
    assert all("replay's operator" in r for r in reasons) and len(reasons) == len(closed)
