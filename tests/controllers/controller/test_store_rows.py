"""The instance rows a pass reads (issue 19, the replay made faster): ended rows pile up for as long as a partition
lives, so after its first pass a controller reads only the rows not ended and those of the instances listed now;
its first pass still reads every row (does the partition have a past? ``decide.begin``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controllers.controller.model import Glance, Observed, Purpose
from controllers.controller.observe import Observer, recorded
from controllers.controller.store import Store
from testkit.builders import PARTITION, FakeSource

NOW = datetime(2026, 10, 1, tzinfo=UTC)


def _row(conn: Any, iid: str, state: str, partition: str = PARTITION) -> None:
    conn.execute(
        "INSERT INTO instances (instance_id, region, partition, pool, workload, plan_generation, state, "
        "purchase_model, provider_tags, launched_at, purpose, hall, name) VALUES (%s, 'r1', %s, 'p1', 'etl', 1, %s, "
        "'reclaimable', %s, %s, 'reclaimable', 'h1', %s)",
        (iid, partition, state, json.dumps({}), NOW, iid))


class _NoListing:
    def list_instances(self, tags: Any = None) -> tuple[Any, ...]:
        return ()


def test_with_the_listing_the_rows_are_the_live_ones_and_the_listed_ones_and_without_it_every_row(conn: Any) -> None:
    for iid, state in (("i-run", "running"), ("i-launch", "launching"), ("i-drain", "draining"),
                       ("i-gone", "terminated"), ("i-lost", "lost"), ("i-back", "lost")):
        _row(conn, iid, state)
    _row(conn, "i-other", "running", partition="other/p")
    store = Store(conn, "r1", PARTITION)
    assert set(store.rows()) == {"i-run", "i-launch", "i-drain", "i-gone", "i-lost", "i-back"}
    assert set(store.rows(["i-back", "i-run"])) == {"i-run", "i-launch", "i-drain", "i-back"}
    assert store.rows(["i-back"])["i-back"]["state"] == "lost"
    assert set(store.rows([])) == {"i-run", "i-launch", "i-drain"}


def test_a_controllers_first_glance_sees_a_partition_that_only_has_ended_rows_and_later_glances_skip_them(
        conn: Any) -> None:
    _row(conn, "i-gone", "terminated")
    observer = Observer(_NoListing(), Store(conn, "r1", PARTITION), conn, FakeSource())   # type: ignore[arg-type]
    first = observer.glance(None, NOW, breach_window=timedelta(minutes=10), want_generation=True)
    later = observer.glance(None, NOW, breach_window=timedelta(minutes=10), want_generation=False)
    assert set(first.rows) == {"i-gone"} and not later.rows


def _listed(iid: str, status: str, partition: str = PARTITION) -> Observed:
    return Observed(iid, iid, "etl", "p1", partition, 1, Purpose.RECLAIMABLE, status, "h1", NOW)


@pytest.mark.parametrize("first", [True, False], ids=["first pass", "later pass"])
def test_the_rows_a_look_computes_are_the_rows_a_second_read_would_return(conn: Any, first: bool) -> None:
    for iid, state in (("i-idle", "running"), ("i-busy", "running"), ("i-noticed", "running"),
                       ("i-vanished", "draining"), ("i-leaving", "terminating"), ("i-ended", "terminated"),
                       ("i-back", "lost"), ("i-old", "lost")):
        _row(conn, iid, state)
    _row(conn, "i-elsewhere", "running", partition="other/p")   # listed here, its row another partition's
    _row(conn, "i-idle-2", "running")
    conn.execute("UPDATE instances SET idle_observations = 2 WHERE instance_id IN ('i-idle', 'i-busy')")
    listing = (_listed("i-idle", "active"), _listed("i-busy", "active"), _listed("i-noticed", "notified"),
               _listed("i-ended", "active"), _listed("i-back", "active"), _listed("i-new", "building"),
               _listed("i-new-idle", "active"), _listed("i-elsewhere", "active"), _listed("i-idle-2", "error"))
    idle = {"i-idle", "i-new-idle", "i-idle-2", "i-vanished"}
    store = Store(conn, "r1", PARTITION)
    glance = Glance(None, False, None, listing, store.rows(None if first else [o.instance_id for o in listing]))
    adopted = store.adopt([o for o in listing if o.instance_id not in glance.rows], NOW)()
    store.observe_states(listing, idle)
    computed = recorded(glance, idle, adopted)
    assert computed == store.rows([o.instance_id for o in listing])
    assert computed["i-idle"]["idle"] == 3 and computed["i-busy"]["idle"] == 0 and "i-vanished" not in computed
    assert sorted(adopted) == ["i-new", "i-new-idle"] and computed["i-new-idle"]["idle"] == 1


@pytest.mark.parametrize("cap", [1, 2, 3], ids=["cap 1", "cap 2", "cap 3"])
def test_with_the_breakers_threshold_the_counters_stop_at_it_and_a_look_computes_what_a_read_returns(
        conn: Any, cap: int) -> None:
    for iid in ("i-idle", "i-at-cap", "i-over", "i-busy"):
        _row(conn, iid, "running")
    conn.execute("UPDATE instances SET idle_observations = CASE instance_id WHEN 'i-idle' THEN 1 "
                 "WHEN 'i-at-cap' THEN %s WHEN 'i-over' THEN 5 ELSE 2 END", (cap,))
    listing = tuple(_listed(i, "active") for i in ("i-idle", "i-at-cap", "i-over", "i-busy"))
    idle = {"i-idle", "i-at-cap", "i-over"}
    store = Store(conn, "r1", PARTITION)
    glance = Glance(None, False, None, listing, store.rows([o.instance_id for o in listing]))
    store.observe_states(listing, idle, cap)
    computed = recorded(glance, idle, [], cap)
    assert computed == store.rows([o.instance_id for o in listing])
    assert {i: r["idle"] for i, r in computed.items()} == {"i-idle": min(2, cap), "i-at-cap": cap, "i-over": cap,
                                                         "i-busy": 0}


def test_a_row_the_listing_leaves_unchanged_is_not_written_again(conn: Any) -> None:
    for iid in ("i-same", "i-capped", "i-counting", "i-noticed"):
        _row(conn, iid, "running")
    conn.execute("UPDATE instances SET idle_observations = 3 WHERE instance_id = 'i-capped'")
    before = dict(conn.execute("SELECT instance_id, xmin::text FROM instances").fetchall())
    listing = (_listed("i-same", "active"), _listed("i-capped", "active"), _listed("i-counting", "active"),
               _listed("i-noticed", "notified"))
    Store(conn, "r1", PARTITION).observe_states(listing, {"i-capped", "i-counting"}, 3)
    after = dict(conn.execute("SELECT instance_id, xmin::text FROM instances").fetchall())
    assert {i for i in before if before[i] != after[i]} == {"i-counting", "i-noticed"}
