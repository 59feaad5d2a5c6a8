"""A replay whose region's warm-up comes from the disk cache decides exactly what a replay that ran it decided.

Three replays of the same busy trace (20 %/h reclaims, 30 % without notice) with the production ranker and its
reclaim forecast (which warms up on the warm-up's feeds): without a cache, with an empty cache (the warm-up is run
apart, ``warmed_region``, and stored) and with the cache holding it (read back; the warm-up must not run). All three
must write the same outbox, plans and instance rows and ranking in force (its forecast fitted on the warm-up's
feeds), and give the same outcomes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controllers.planning import Strategy
from controllers.replay import through_controller
from controllers.replay.through_controller import replay_through_controller
from sco.commands.simulate_controller import production_ranker
from testkit.postgres import PostgresProcess
from tests.controllers.replay.test_through_controller_fast import BUSY, ETL, START, TRAIN, UNITS, _written
from tests.support.postgres import migrated_connections


@pytest.fixture
def three_databases(postgres_server: PostgresProcess) -> Iterator[list[Any]]:
    with migrated_connections(postgres_server, 3) as conns:
        yield conns


def _replay(conn: Any, cache: Path | None) -> dict[str, Any]:
    diagnostics: dict[str, int] = {}
    out = replay_through_controller(BUSY, START, 3 / 24, {c.ref: c for c in (ETL, TRAIN)}, UNITS, conn,
                                    strategy=Strategy.EXPECTED_COST, warmup_days=0.5,
                                    ranker=production_ranker(conn, BUSY.region, (60,)), diagnostics=diagnostics,
                                    cache=cache)
    return {"outcomes": {w: (o.interruptions, o.no_notice_losses, o.wasted_s, o.shortfall_s, o.instance_s,
                             str(o.cost), str(o.fallback_cost)) for w, o in sorted(out.items())},
            "diagnostics": diagnostics, **_written(conn),
            "ranking": conn.execute("SELECT pool, rank, score::text, ranked_at, inputs::text, reclaim_p_1h::text, "
                                    "reclaim_p::text, model_version FROM rankings_in_force ORDER BY pool").fetchall()}


@pytest.mark.slow
def test_a_replay_whose_warm_up_is_read_back_from_the_cache_decides_what_one_that_ran_it_decided(
        three_databases: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    ran = _replay(three_databases[0], None)
    stored = _replay(three_databases[1], cache)
    assert [p.name.split("-")[0] for p in cache.glob("*.pickle")] == ["warmup"]

    def no_warm_up(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the warm-up ran again: the cache was not read")

    monkeypatch.setattr(through_controller, "warmed_region", no_warm_up)
    read_back = _replay(three_databases[2], cache)
    assert {e[0] for e in ran["events"]} >= {"placed", "lost"} and len(ran["plans"]) > 2   # much decided
    assert all(r[7] for r in ran["ranking"])   # a forecast fitted on the warm-up's feeds is in the ranking
    for key in ("events", "plans", "rows", "outcomes", "diagnostics", "ranking"):
        assert stored[key] == ran[key], key
        assert read_back[key] == ran[key], key
