"""The instance rows a pass reads (issue 19, the replay made faster): ended rows pile up for as long as a partition
lives, so after its first pass a controller reads only the rows not ended and those of the instances listed now;
its first pass still reads every row (does the partition have a past? ``decide.begin``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from controllers.controller.observe import Observer
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
