"""The reclaim forecast in the replay (``sco.commands.forecast_feed``): the warm-up's feeds fit the first model,
and every ranking in force the replay publishes carries the forecast beside the score, the composite score
unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from controllers.planning import Strategy
from controllers.replay.through_controller import replay_through_controller
from controllers.simregion.config import RegionConfig
from sco.commands.simulate_controller import production_ranker
from testkit.builders import contract

START = datetime(2026, 10, 1, 12, tzinfo=UTC)
ETL = contract("etl", "T3")
BUSY = RegionConfig(seed=2, pools=24, reclaim_rate_pct_h=20.0, hall_reclaims_per_30d=0.0)


@pytest.fixture
def conn(pg_migrated_url: str) -> Iterator[Any]:
    with psycopg.connect(pg_migrated_url, autocommit=True) as c:
        yield c


def _replay(conn: Any, horizons: tuple[int, ...] | None) -> list[tuple[Any, ...]]:
    replay_through_controller(BUSY, START, 0.05, {ETL.ref: ETL}, {"etl": 10}, conn, strategy=Strategy.DEPTH_FIRST,
                              warmup_days=1.5, ranker=production_ranker(conn, BUSY.region, horizons))
    return conn.execute("SELECT pool, rank, score, reclaim_p_1h, reclaim_p, model_version FROM rankings_in_force "
                        "ORDER BY pool").fetchall()


@pytest.mark.slow
def test_the_replays_ranking_in_force_carries_a_forecast_fitted_on_the_warm_up_beside_the_same_scores(
        conn: Any) -> None:
    rows = _replay(conn, (45, 60))
    assert rows and all(r[3] is not None and 0 < r[3] < 1 for r in rows)
    assert all(set(r[4]) == {"45", "60"} and set(r[4]["60"]) == {"notice", "no_notice"} for r in rows)
    assert len({r[5] for r in rows}) == 1 and rows[0][5].startswith("hgb-")
    # a busier pool is forecast a higher reclaim probability than a calmer one somewhere: the forecast varies
    assert len({round(r[3], 4) for r in rows}) > 1
    for r in rows:   # with notice and without add up to the whole
        assert abs(sum(r[4]["60"].values()) - r[3]) < 1e-5


@pytest.mark.slow
def test_without_a_forecast_the_columns_stay_null_and_the_scores_are_those_with_one(conn: Any) -> None:
    with_forecast = _replay(conn, (60,))
    conn.execute("DELETE FROM rankings_in_force")
    for table in ("plans", "instances", "outbox", "exclusions"):
        conn.execute(f"DELETE FROM {table}")
    without = _replay(conn, None)
    assert all(r[3] is None and r[4] is None and r[5] is None for r in without)
    assert [r[:3] for r in without] == [r[:3] for r in with_forecast]


@pytest.mark.slow
def test_the_forecasts_frames_stay_one_chunk_however_many_rankings_added_to_them(conn: Any) -> None:
    """A chunk a ranking kept for the week made each later ranking's filters and counts walk ~2,000 chunks by the
    replay's second week (0.6 → 10 ms a polars call): the frames the forecast keeps are one chunk each."""
    ranker = production_ranker(conn, BUSY.region, (60,))
    replay_through_controller(BUSY, START, 0.25, {ETL.ref: ETL}, {"etl": 10}, conn, strategy=Strategy.DEPTH_FIRST,
                              warmup_days=1.5, ranker=ranker)
    forecaster = ranker.computer.forecaster   # type: ignore[attr-defined]
    assert forecaster.model is not None and forecaster.recent is not None and forecaster.kept is not None
    assert forecaster.recent.height > 100   # a busy region: reclaims added ranking after ranking
    assert (forecaster.recent.n_chunks(), forecaster.kept.n_chunks()) == (1, 1)
