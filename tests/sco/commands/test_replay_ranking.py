"""The replay's ranking computed in a worker process (``RankingWorker``) puts in force the very rows the replaying
process would have computed, at the same passes; with a latency, each ranking is in force that long after its
inputs; a worker that fails or dies stops the replay with its error, not a hang."""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controllers.planning import Strategy
from controllers.replay.through_controller import PoolFeed, Ranker, replay_through_controller
from controllers.simregion.config import RegionConfig
from sco.commands.replay_ranking import RankingWorker, contract_horizons, forecast_horizons, production_ranker
from testkit.builders import contract
from testkit.postgres import PostgresProcess
from tests.support.postgres import migrated_connections

START = datetime(2026, 10, 1, 12, tzinfo=UTC)
ETL = contract("etl", "T3")
TRAIN = contract("train", "T2", vcpu=8, mem=32)
UNITS = {"etl": 20, "train": 12}
BUSY = RegionConfig(seed=2, pools=24, reclaim_rate_pct_h=20.0, no_notice_share=0.3, hall_reclaims_per_30d=0.0)
HORIZONS = (60,)
RANDOM_KEYS = ("reservation", "request", "decision")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture
def databases(postgres_server: PostgresProcess) -> Iterator[list[Any]]:
    with migrated_connections(postgres_server, 2) as conns:
        yield conns


class _Published:
    """A ``Ranker`` wrapper that records (the replay's time when a ranking was put in force, its inputs' time)."""

    def __init__(self, inner: Ranker, clock: Callable[[], datetime]) -> None:
        self.inner, self.clock = inner, clock
        self.log: list[tuple[datetime, datetime]] = []
        self.warm = getattr(inner, "warm", None)

    def __call__(self, now: datetime, feeds: Sequence[PoolFeed]) -> Callable[[], None]:
        publish = self.inner(now, feeds)

        def logged() -> None:
            publish()
            self.log.append((self.clock(), now))
        return logged


def _replay(conn: Any, ranker: Ranker, latency: timedelta, strategy: Strategy = Strategy.EXPECTED_COST
            ) -> dict[str, Any]:
    out = replay_through_controller(BUSY, START, 3 / 24, {c.ref: c for c in (ETL, TRAIN)}, UNITS, conn,
                                    strategy=strategy, warmup_days=1.5, ranker=ranker,
                                    rank_latency=latency)
    events = []
    for (payload,) in conn.execute("SELECT payload FROM outbox ORDER BY id"):
        e = json.loads(bytes(payload))
        attrs = {k: v for k, v in (e.get("attributes") or {}).items() if k not in RANDOM_KEYS}
        events.append((e["kind"], e["time"], e.get("workload"), e.get("pool"), e.get("instance"),
                       UUID.sub("<id>", json.dumps(attrs, sort_keys=True))))
    ranked = conn.execute("SELECT pool, rank, score, generation, reclaim_p_1h, model_version FROM rankings_in_force "
                          "ORDER BY pool").fetchall()
    return {"events": events, "ranked": ranked,
            "plans": conn.execute("SELECT workload, generation, plan::text FROM plans ORDER BY 1, 2").fetchall(),
            "outcomes": {w: (o.interruptions, o.wasted_s, o.shortfall_s, str(o.cost)) for w, o in out.items()}}


@pytest.mark.slow
def test_the_worker_puts_in_force_the_rows_this_process_would_at_the_same_passes(databases: list[Any]) -> None:
    a, b = databases
    latency = timedelta(minutes=2)
    here = _Published(production_ranker(a, BUSY.region, HORIZONS), lambda: _CLOCK[0])
    local = _replay(a, here, latency)
    worker = RankingWorker(b, BUSY.region, HORIZONS)
    try:
        there = _Published(worker, lambda: _CLOCK[0])
        remote = _replay(b, there, latency)
        assert "fitted on" in worker.note()   # the forecast was fitted in the worker, on the warm-up's feeds
    finally:
        worker.close()
    assert local["ranked"] and local["ranked"][0][4] is not None   # a forecast was published beside the scores
    assert {e[0] for e in local["events"]} >= {"placed", "terminated"} and len(local["plans"]) > 2
    for key in ("events", "ranked", "plans", "outcomes"):
        assert remote[key] == local[key], key
    assert there.log == here.log
    first, *later = here.log
    assert first[0] == first[1] == START   # a ranking is in force when the controllers start
    assert len(later) == 3 * 12 - 1 and all(put - computed == latency for put, computed in later)


_CLOCK = [START]   # the time of the replay's pass running now


def test_the_replay_forecasts_only_for_a_planner_that_reads_the_forecast() -> None:
    contracts = [ETL, TRAIN]
    assert forecast_horizons(contracts, None) == contract_horizons(contracts) == (60,)
    assert forecast_horizons(contracts, Strategy.EXPECTED_COST) == contract_horizons(contracts)
    assert forecast_horizons(contracts, Strategy.PRICE_FIRST) is None


@pytest.mark.slow
def test_depth_first_decides_the_same_without_the_forecast_and_expected_cost_does_not(
        postgres_server: PostgresProcess) -> None:
    """Through the production controller: the forecast the replay skips for a baseline changes none of its
    events, plans or outcomes; the same swap changes expected-cost's (so the comparison can see a change)."""
    with migrated_connections(postgres_server, 4) as (a, b, c, d):
        runs = {(strategy, horizons): _replay(conn, production_ranker(conn, BUSY.region, horizons), timedelta(0),
                                              strategy)
                for conn, strategy, horizons in ((a, Strategy.DEPTH_FIRST, HORIZONS), (b, Strategy.DEPTH_FIRST, None),
                                                 (c, Strategy.EXPECTED_COST, HORIZONS),
                                                 (d, Strategy.EXPECTED_COST, None))}
    with_, without = runs[(Strategy.DEPTH_FIRST, HORIZONS)], runs[(Strategy.DEPTH_FIRST, None)]
    assert with_["ranked"][0][4] is not None and without["ranked"][0][4] is None
    assert {e[0] for e in with_["events"]} >= {"placed", "terminated"} and len(with_["plans"]) > 2
    for key in ("events", "plans", "outcomes"):
        assert without[key] == with_[key], key
    cost_with, cost_without = runs[(Strategy.EXPECTED_COST, HORIZONS)], runs[(Strategy.EXPECTED_COST, None)]
    assert (cost_with["events"], cost_with["plans"]) != (cost_without["events"], cost_without["plans"])


@pytest.fixture(autouse=True)
def _track_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Record each pass's time in ``_CLOCK`` (the replay's clock is internal to it)."""
    from controllers.replay import through_controller

    inner = through_controller._pass

    def tracked(run: Any, ctls: Any, outbox: Any, ranker: Any, ranking: Any, now: datetime, *args: Any,
                **kwargs: Any) -> None:
        _CLOCK[0] = now
        inner(run, ctls, outbox, ranker, ranking, now, *args, **kwargs)
    monkeypatch.setattr(through_controller, "_pass", tracked)


@pytest.mark.slow
def test_a_worker_that_fails_hands_its_traceback_to_the_replay(databases: list[Any]) -> None:
    worker = RankingWorker(databases[0], BUSY.region, None)
    try:
        publish = worker(START, ["not a feed"])   # type: ignore[list-item]
        with pytest.raises(RuntimeError, match=r"(?s)the ranking worker failed:.*AttributeError"):
            publish()
        assert "no reclaim forecast" in worker.note()   # it answers what it is asked next
    finally:
        worker.close()


@pytest.mark.slow
def test_a_worker_that_dies_is_an_error_in_the_replay_not_a_wait(databases: list[Any]) -> None:
    worker = RankingWorker(databases[0], BUSY.region, None)
    try:
        assert worker.cpu_s() >= 0.0
        pid = worker._proc.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        worker._proc.join(timeout=30)
        with pytest.raises(RuntimeError, match="the ranking worker ended"):
            worker(START, [])()
    finally:
        worker.close()
