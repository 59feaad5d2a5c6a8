"""What the store tells a pass about exclusions and other partitions' launches, on a real PostgreSQL (issue 19):
an exclusion keeps its cause through the table (a full pool is closed to new units, a pool being reclaimed is
ineligible), and every partition's launches since the rate card are counted, not only the pass's own."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from contracts.events import Event
from contracts.subjects import EventKind
from controllers.controller.exclusion import FULL, RECLAIM, Exclusion
from controllers.controller.store import Store
from testkit.builders import PARTITION

NOW = datetime(2026, 10, 1, 12, tzinfo=UTC)
CARD = NOW - timedelta(minutes=3)


def _exclusion(store: Store, pool: str, cause: str) -> None:
    ex = Exclusion(pool, "why", NOW - timedelta(hours=1), NOW + timedelta(hours=1), NOW + timedelta(hours=2), 1,
                   ("e1",), cause)
    store.write_exclusion(ex, Event(kind=EventKind.EXCLUDED, time=ex.excluded_at, region="r1", pool=pool,
                                    cause=ex.reason, source="exclusion-watcher"))


def test_an_exclusion_keeps_its_cause_through_the_table_and_only_a_reclaimed_pool_is_ineligible(conn: Any) -> None:
    store = Store(conn, "r1", PARTITION)
    _exclusion(store, "p-full", FULL)
    _exclusion(store, "p-reclaimed", RECLAIM)
    inputs = store.inputs(NOW)
    assert (inputs.excluded, inputs.full) == ({"p-reclaimed"}, {"p-full"})
    assert inputs.full_since == {"p-full": NOW - timedelta(hours=1)}   # its depth is zero until a card after it
    _, active = store.exclusions()   # the watcher restarts with each exclusion's cause
    assert {pool: ex.cause for pool, ex in active.items()} == {"p-full": FULL, "p-reclaimed": RECLAIM}
    after = store.inputs(NOW + timedelta(hours=1, minutes=30))   # cool-off over: only a reclaimed pool is on probation
    assert (after.excluded, after.full, after.probation) == (set(), set(), {"p-reclaimed"})
    # when the sets change with nothing else changing: the soonest end of an exclusion, then of its probation
    assert inputs.changes_at == NOW + timedelta(hours=1)
    assert after.changes_at == NOW + timedelta(hours=2)
    assert store.inputs(NOW + timedelta(hours=3)).changes_at is None


def _row(conn: Any, iid: str, partition: str, launched: datetime, state: str = "running", pool: str = "p1") -> None:
    conn.execute(
        "INSERT INTO instances (instance_id, region, partition, pool, workload, plan_generation, state, "
        "purchase_model, provider_tags, launched_at, purpose, hall, name) VALUES (%s, 'r1', %s, %s, 'etl', 1, %s, "
        "'reclaimable', %s, %s, 'reclaimable', 'h1', %s)",
        (iid, partition, pool, state, json.dumps({}), launched, iid))


def test_the_other_partitions_live_launches_since_the_rate_card_are_counted_per_pool(conn: Any) -> None:
    other = "r1/k8s-batch"
    _row(conn, "mine", PARTITION, CARD + timedelta(seconds=10))            # ours: from the listing, not here
    _row(conn, "theirs-1", other, CARD + timedelta(seconds=10))
    _row(conn, "theirs-2", other, CARD, state="launching")                 # in the card's instant: after it
    _row(conn, "theirs-3", other, CARD + timedelta(seconds=20), pool="p2")
    _row(conn, "theirs-old", other, CARD - timedelta(seconds=1))           # on the card already
    _row(conn, "theirs-lost", other, CARD + timedelta(seconds=30), state="lost")
    _row(conn, "theirs-notified", other, CARD + timedelta(seconds=30), state="draining")
    store = Store(conn, "r1", PARTITION)
    assert store.others_launched_since(CARD) == {"p1": 2, "p2": 1}
    assert store.others_launched_since(None) == {}


def test_the_depth_input_of_the_ranking_in_force_is_read_with_its_score(conn: Any) -> None:
    """The planner takes a full pool's depth term off the ranking's score: the forward share and quota headroom
    the ranking was made with come with the score (a ranking without them: none)."""
    for pool, inputs in (("p1", {"forward_share": 0.8, "quota_headroom": 0.5}), ("p2", {"forward_share": 0.3}),
                         ("p3", {})):
        conn.execute("INSERT INTO rankings_in_force (region, pool, rank, score, generation, ranked_at, inputs) "
                     "VALUES ('r1', %s, 1, 0.9, 1, %s, %s)", (pool, CARD, json.dumps(inputs)))
    got = Store(conn, "r1", PARTITION).inputs(NOW)
    assert got.scores == {"p1": 0.9, "p2": 0.9, "p3": 0.9}
    assert got.depth == {"p1": (0.8, 0.5), "p2": (0.3, 1.0)}


def test_the_reclaim_evidence_is_read_and_the_forecast_column_only_where_the_table_has_it(conn: Any) -> None:
    """Issue 36: the ranking's reclaims and instance-hours per pool feed the baseline estimate; the forecast
    column (``reclaim_p_1h``, the forecast's own migration) is read when the table has it and is no error when it
    has not."""
    for pool, inputs in (("p1", {"reclaims": 4, "instance_hours": 100.0}), ("p2", {"instance_hours": 50.0}),
                         ("p3", {})):
        conn.execute("INSERT INTO rankings_in_force (region, pool, rank, score, generation, ranked_at, inputs) "
                     "VALUES ('r1', %s, 1, 0.9, 1, %s, %s)", (pool, CARD, json.dumps(inputs)))
    before = Store(conn, "r1", PARTITION).inputs(NOW)
    assert before.exposure == {"p1": (4.0, 100.0), "p2": (0.0, 50.0)} and before.forecast == {}
    conn.execute("ALTER TABLE rankings_in_force ADD COLUMN IF NOT EXISTS reclaim_p_1h double precision")
    conn.execute("UPDATE rankings_in_force SET reclaim_p_1h = 0.07 WHERE pool = 'p2'")
    after = Store(conn, "r1", PARTITION).inputs(NOW)
    assert after.forecast == {"p2": 0.07} and after.exposure == before.exposure
