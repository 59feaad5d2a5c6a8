"""``sco simulate --engine controller --jobs N``: strategies replayed through the controller in their own processes,
each on its own database, give what the same replays give one after the other, and report progress."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from controllers.planning import Strategy
from controllers.simregion.config import RegionConfig
from sco.commands.simulate_controller import run_controller_engine, run_in_processes
from stores import migrate
from testkit.builders import contract
from testkit.postgres import PostgresProcess

START = datetime(2026, 10, 1, 12, tzinfo=UTC)
CONTRACTS = [contract("etl", "T3"), contract("train", "T2", vcpu=8, mem=32)]
UNITS = {"etl": 12, "train": 6}
BUSY = RegionConfig(seed=3, pools=24, reclaim_rate_pct_h=20.0, no_notice_share=0.3, hall_reclaims_per_30d=0.0)
NAMES = ("depth-first", "price-first")


class _Databases:
    """``EmbeddedPostgres.database`` on the session's PostgreSQL."""

    def __init__(self, server: PostgresProcess) -> None:
        self.server = server

    def database(self) -> str:
        url = self.server.create_database()
        with psycopg.connect(url, autocommit=True) as conn:
            migrate.migrate_postgres(conn)
        return url


def _figures(outcomes: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    return {w: (o.interruptions, o.wasted_s, o.shortfall_s, o.instance_s, str(o.cost)) for w, o in outcomes.items()}


@pytest.mark.slow
def test_strategies_in_their_own_processes_give_what_they_give_one_after_the_other_with_progress(
        postgres_server: PostgresProcess) -> None:
    dbs = _Databases(postgres_server)
    reports: list[dict[str, float]] = []
    done = run_in_processes(dbs, NAMES, 2, BUSY, START, 2 / 24, CONTRACTS, UNITS, 0.1,
                            lambda shares, _: reports.append(dict(shares)))
    assert set(done) == set(NAMES) and reports[-1] == {n: 1.0 for n in NAMES}
    for name in NAMES:
        diagnostics: dict[str, int] = {}
        alone = run_controller_engine(dbs.database(), BUSY, START, 2 / 24, CONTRACTS, UNITS, Strategy(name), 0.1,
                                      None, diagnostics)
        outcomes, seen = done[name]
        assert _figures(outcomes) == _figures(alone) and seen == diagnostics and seen.get("placed", 0) > 0


def test_a_replay_that_fails_in_its_process_is_reported_and_the_others_are_stopped(
        postgres_server: PostgresProcess) -> None:
    class _Broken(_Databases):
        def database(self) -> str:
            return self.server.database_url("no_such_database")

    with pytest.raises(RuntimeError, match="the replay of depth-first failed"):
        run_in_processes(_Broken(postgres_server), NAMES, 1, BUSY, START, 1 / 24, CONTRACTS, UNITS, 0.1,
                         lambda shares, _: None)


@pytest.mark.slow
def test_a_ranking_latency_reaches_each_strategys_process_and_is_ranked_by_a_worker_there(
        postgres_server: PostgresProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--rank-latency-min``: the processes replay with the latency (what the same replay gives alone with it),
    and run_controller_engine ranks in a worker exactly when there is a latency to overlap."""
    from datetime import timedelta

    from sco.commands import simulate_controller

    dbs, latency = _Databases(postgres_server), timedelta(minutes=2)
    done = run_in_processes(dbs, ("price-first",), 1, BUSY, START, 2 / 24, CONTRACTS, UNITS, 0.1,
                            lambda *_: None, rank_latency=latency)
    workers: list[Any] = []
    real = simulate_controller.ranking_worker

    def counted(*args: Any, **kwargs: Any) -> Any:
        workers.append(args)
        return real(*args, **kwargs)
    monkeypatch.setattr(simulate_controller, "ranking_worker", counted)
    alone = run_controller_engine(dbs.database(), BUSY, START, 2 / 24, CONTRACTS, UNITS, Strategy.PRICE_FIRST, 0.1,
                                  rank_latency=latency)
    assert len(workers) == 1 and _figures(done["price-first"][0]) == _figures(alone)
    run_controller_engine(dbs.database(), BUSY, START, 1 / 24, CONTRACTS, UNITS, Strategy.PRICE_FIRST, 0.1)
    assert len(workers) == 1   # at once: ranked in this process
