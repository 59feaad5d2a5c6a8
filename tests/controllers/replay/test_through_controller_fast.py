"""The replay through the controller made faster (issue 19) decides exactly what the path before decided.

The path before: every statement its own round trip, every listing rebuilt, every instance row read each pass
(``fast=False`` and ``Store.rows`` ignoring the listing). The faster path: each pass's statements in psycopg's
pipeline mode, the region's listing built once per instance state, only the rows a pass uses. On a busy trace
(20 %/h reclaims, 30 % without notice: launches, losses, terminations, re-plans) both must write the same outbox,
the same plans and instance rows, and give the same outcomes. A faster path that got one thing wrong — a listing
that kept an instance's status from before its notice — is caught by the same comparison."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from controllers.controller.store import Store
from controllers.planning import Strategy
from controllers.replay import through_controller
from controllers.replay.through_controller import replay_through_controller
from controllers.simregion.config import RegionConfig
from controllers.simregion.region import SimulatedRegion
from sco.commands.simulate_controller import production_ranker
from stores import migrate
from testkit.builders import contract
from testkit.postgres import PostgresProcess

START = datetime(2026, 10, 1, 12, tzinfo=UTC)
ETL = contract("etl", "T3")
TRAIN = contract("train", "T2", vcpu=8, mem=32)
UNITS = {"etl": 20, "train": 12}
BUSY = RegionConfig(seed=2, pools=24, reclaim_rate_pct_h=20.0, no_notice_share=0.3, hall_reclaims_per_30d=0.0)
RANDOM_KEYS = ("reservation", "request", "decision")   # uuid4s minted by the controller
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")   # event ids in evidence


@pytest.fixture
def two_databases(postgres_server: PostgresProcess) -> Iterator[tuple[Any, Any]]:
    urls = [postgres_server.create_database() for _ in range(2)]
    with psycopg.connect(urls[0], autocommit=True) as a, psycopg.connect(urls[1], autocommit=True) as b:
        for c in (a, b):
            migrate.migrate_postgres(c)
        yield a, b


def _replay(conn: Any, *, fast: bool) -> dict[str, Any]:
    diagnostics: dict[str, int] = {}
    out = replay_through_controller(BUSY, START, 4 / 24, {c.ref: c for c in (ETL, TRAIN)}, UNITS, conn,
                                    strategy=Strategy.DEPTH_FIRST, warmup_days=0.25,
                                    ranker=production_ranker(conn, BUSY.region), diagnostics=diagnostics, fast=fast)
    return {"outcomes": {w: (o.interruptions, o.no_notice_losses, o.wasted_s, o.shortfall_s, o.instance_s,
                             str(o.cost), str(o.fallback_cost)) for w, o in sorted(out.items())},
            "diagnostics": diagnostics, **_written(conn)}


def _written(conn: Any) -> dict[str, Any]:
    events = []
    for (payload,) in conn.execute("SELECT payload FROM outbox ORDER BY id"):
        e = json.loads(bytes(payload))
        attrs = {k: v for k, v in (e.get("attributes") or {}).items() if k not in RANDOM_KEYS}
        events.append((e["kind"], e["time"], e.get("workload"), e.get("pool"), e.get("instance"), e.get("cause"),
                       UUID.sub("<id>", json.dumps(attrs, sort_keys=True))))
    plans = conn.execute("SELECT workload, generation, partition, plan::text, in_force FROM plans "
                         "ORDER BY workload, generation").fetchall()
    rows = conn.execute("SELECT instance_id, workload, pool, state, purpose, plan_generation, idle_observations "
                        "FROM instances ORDER BY instance_id").fetchall()
    return {"events": events, "plans": plans, "rows": rows}


def _before(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Store.rows`` as it was: every row of the partition, whatever the listing."""
    rows = Store.rows
    monkeypatch.setattr(Store, "rows", lambda self, listed=None: rows(self))


@pytest.mark.slow
def test_the_faster_replay_writes_the_same_events_plans_and_rows_and_gives_the_same_outcomes_as_the_path_before(
        two_databases: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = two_databases
    fast = _replay(a, fast=True)
    with monkeypatch.context() as m:
        _before(m)
        before = _replay(b, fast=False)
    kinds = {e[0] for e in fast["events"]}
    assert {"placed", "lost", "terminated"} <= kinds and len(fast["plans"]) > 2   # a busy trace: much decided
    assert any(r[3] in ("terminated", "lost") for r in fast["rows"])           # ended rows the fast pass skips
    # the faster path skips the passes after a quiet one while nothing changed; the path before takes them all
    taken, every = fast["diagnostics"].pop("controller-passes"), before["diagnostics"].pop("controller-passes")
    assert every == 4 * 60 and taken < every   # one partition, a pass a minute (the last one is not counted)
    for key in ("events", "plans", "rows", "outcomes", "diagnostics"):
        assert fast[key] == before[key], key


@pytest.mark.slow
def test_a_replay_that_skips_passes_without_waking_on_changed_inputs_is_told_apart_from_the_path_before(
        two_databases: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: skipping every pass after a quiet one until a timed rule is due, whatever the
    region did (no wake on events, rate cards, reservations or rankings), decides otherwise."""
    a, b = two_databases
    with monkeypatch.context() as m:
        m.setattr(through_controller, "_woken", lambda run: False)
        wrong = _replay(a, fast=True)
    with monkeypatch.context() as m:
        _before(m)
        before = _replay(b, fast=False)
    assert wrong["diagnostics"]["controller-passes"] < before["diagnostics"]["controller-passes"]
    assert wrong["events"] != before["events"] or wrong["rows"] != before["rows"]


@pytest.mark.slow
def test_a_listing_that_keeps_an_instances_status_from_before_its_notice_is_told_apart_from_the_path_before(
        two_databases: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: a listing cache keyed on the instance alone shows a noticed instance active."""
    a, b = two_databases
    built = SimulatedRegion._instance

    def stale(self: SimulatedRegion, inst: Any) -> Any:
        if not self.cache_listing:
            return built(self, inst)
        cache = self.__dict__.setdefault("_stale", {})
        return cache.setdefault(inst.id, built(self, inst))

    with monkeypatch.context() as m:
        m.setattr(SimulatedRegion, "_instance", stale)
        wrong = _replay(a, fast=True)
    with monkeypatch.context() as m:
        _before(m)
        before = _replay(b, fast=False)
    assert wrong["events"] != before["events"] or wrong["rows"] != before["rows"]
