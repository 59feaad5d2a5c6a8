"""The forecast's feature and label definitions (``orchestration.forecast.features``), as tables: the counts in
each window, the shares of pool, aggregate and hall, the forward share, and the labels looking forward."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from orchestration.forecast.features import FEATURES, feature_frame, labels, window_counts

T0 = datetime(2026, 3, 2, 10, tzinfo=UTC)   # a Monday, 10:00
POOLS = pl.DataFrame({"pool": ["a", "b", "c"], "aggregate": ["x", "x", "y"], "hall": ["h1", "h1", "h1"],
                      "vcpu": [2, 4, 8], "group": ["g", "g", "y"]})


def _cards(times: list[datetime], free: tuple[int, int, int] = (2, 5, 0), forward: float | None = None
           ) -> pl.DataFrame:
    rows = [(t, p, 0.5 * (i + 1), 2.0, free[i], 10, 8, forward) for t in times for i, p in enumerate("abc")]
    return pl.DataFrame(rows, schema=["time", "pool", "rate_eur_h", "guaranteed_rate_eur_h", "free", "capacity",
                                      "instances", "forward_free"], orient="row")


def _reclaims(rows: list[tuple[timedelta, str, bool]]) -> pl.DataFrame:
    return pl.DataFrame([(T0 + d, p, n) for d, p, n in rows], schema=["time", "pool", "notice"], orient="row")


@pytest.mark.parametrize(("ago", "window", "counted"), [
    (timedelta(minutes=59), timedelta(hours=1), 1),
    (timedelta(hours=1), timedelta(hours=1), 0),        # (t - w, t]: a reclaim exactly w ago is out
    (timedelta(0), timedelta(hours=1), 1),              # one at t is in
    (timedelta(hours=5), timedelta(hours=6), 1),
    (timedelta(days=6, hours=23), timedelta(days=7), 1),
    (timedelta(days=8), timedelta(days=7), 0),
])
def test_a_window_counts_the_reclaims_in_the_width_ending_at_the_card(ago: timedelta, window: timedelta,
                                                                      counted: int) -> None:
    rows = _cards([T0]).filter(pl.col("pool") == "a")
    out = window_counts(rows, _reclaims([(-ago, "a", True)]), POOLS, "pool", [("n", window)])
    assert out["n"].to_list() == [counted]


def test_a_snapshot_and_a_history_get_the_same_features_at_the_same_card() -> None:
    times = [T0 - timedelta(minutes=5 * k) for k in range(30, -1, -1)]
    reclaims = _reclaims([(-timedelta(minutes=m), p, True) for m, p in ((3, "a"), (40, "a"), (90, "b"), (200, "c"))])
    history = feature_frame(_cards(times), POOLS, reclaims).filter(pl.col("time") == T0).sort("pool")
    snapshot = feature_frame(_cards([T0]), POOLS, reclaims).sort("pool")
    assert history.select(FEATURES).rows() == snapshot.select(FEATURES).rows()


def test_a_snapshot_counts_every_key_as_the_history_does_on_a_random_week_of_many_pools() -> None:
    # the snapshot sums its pools' counts for an aggregate, group or hall; the history counts the key's reclaims
    rng = random.Random(7)
    names = [f"p{i}" for i in range(12)]
    pools = pl.DataFrame({"pool": names, "aggregate": [f"a{i % 4}" for i in range(12)],
                          "hall": [f"h{i % 2}" for i in range(12)], "vcpu": [2 + i % 3 for i in range(12)],
                          "group": [f"g{i % 3}" for i in range(12)]})
    # reclaims of a pool missing from the catalogue ("zz") count for no aggregate, group or hall
    rows = [(-timedelta(minutes=rng.randrange(0, 8 * 24 * 60)), rng.choice([*names, "zz"]), rng.random() < 0.8)
            for _ in range(400)]
    rows += [(timedelta(0), "p3", True), (-timedelta(hours=1), "p3", True), (timedelta(minutes=5), "p4", True)]
    reclaims = _reclaims(rows)
    times = [T0 - timedelta(minutes=5), T0]
    cards = pl.DataFrame([(t, p, 1.0, 2.0, 3, 10, 5, None) for t in times for p in names],
                         schema=["time", "pool", "rate_eur_h", "guaranteed_rate_eur_h", "free", "capacity",
                                 "instances", "forward_free"], orient="row")
    history = feature_frame(cards, pools, reclaims).filter(pl.col("time") == T0).sort("pool")
    snapshot = feature_frame(cards.filter(pl.col("time") == T0), pools, reclaims).sort("pool")
    assert history.select(FEATURES).rows() == snapshot.select(FEATURES).rows()
    assert snapshot["hall_reclaims_24h"].sum() > 0 and snapshot["pool_rate_7d"].n_unique() > 3


def test_the_shares_of_pool_aggregate_and_hall_are_weighed_in_vcpu() -> None:
    f = feature_frame(_cards([T0]), POOLS, _reclaims([])).sort("pool")
    assert f["free_share"].to_list() == [0.2, 0.5, 0.0]
    # aggregate x: (2x2 + 5x4) free vCPU of (10x2 + 10x4); y: none free
    assert f["aggregate_free_share"].to_list() == pytest.approx([24 / 60, 24 / 60, 0.0])
    assert f["hall_free_share"].to_list() == pytest.approx([24 / 140] * 3)
    assert f["price_ratio"].to_list() == [0.25, 0.5, 0.75]
    assert f["weekday"].to_list() == [1.0] * 3 and f["hour_cos"][0] == pytest.approx(-0.866, abs=1e-3)


@pytest.mark.parametrize(("forward", "share", "drop"), [(None, 0.2, None), (1.0, 0.1, 0.1), (9.0, 0.2, -0.7)])
def test_the_forward_share_is_the_lesser_of_now_and_ahead(forward: float | None, share: float,
                                                          drop: float | None) -> None:
    f = feature_frame(_cards([T0], forward=forward), POOLS, _reclaims([])).filter(pl.col("pool") == "a")
    assert f["forward_share"][0] == pytest.approx(share)
    assert f["forward_drop"][0] == (pytest.approx(drop) if drop is not None else None)


def test_reclaim_rates_are_per_instance_and_hour_and_the_group_and_aggregate_pool_theirs() -> None:
    reclaims = _reclaims([(-timedelta(minutes=10), "a", True), (-timedelta(minutes=20), "b", False)])
    f = feature_frame(_cards([T0]), POOLS, reclaims).sort("pool")
    assert f["pool_rate_1h"].to_list() == [1 / 8, 1 / 8, 0.0]
    assert f["pool_rate_24h"].to_list() == pytest.approx([1 / 8 / 24, 1 / 8 / 24, 0.0])
    assert f["aggregate_rate_1h"].to_list() == [2 / 16, 2 / 16, 0.0]
    assert f["group_rate_6h"].to_list() == pytest.approx([2 / 16 / 6, 2 / 16 / 6, 0.0])
    assert f["hall_reclaims_24h"].to_list() == [2.0] * 3
    assert f["burst"][0] > f["burst"][2] == 1.0   # a quiet aggregate's hour is an ordinary one


@pytest.mark.parametrize(("after", "notice", "y", "y_nn"), [
    (timedelta(minutes=30), True, 1 / 8, 0.0),
    (timedelta(minutes=30), False, 1 / 8, 1 / 8),
    (timedelta(minutes=61), True, 0.0, 0.0),   # after the horizon
    (timedelta(0), True, 0.0, 0.0),            # (t, t + h]: one at t is the past's
])
def test_a_label_is_the_share_of_the_pools_instances_reclaimed_within_the_horizon(
        after: timedelta, notice: bool, y: float, y_nn: float) -> None:
    reclaims = _reclaims([(after, "a", notice)])
    out = labels(feature_frame(_cards([T0]), POOLS, reclaims), reclaims, [60], until=T0 + timedelta(hours=2))
    a = out.filter(pl.col("pool") == "a")
    assert (a["y_60"][0], a["y_60_nn"][0]) == (pytest.approx(y), pytest.approx(y_nn))


def test_samples_whose_horizon_has_not_ended_are_left_out() -> None:
    f = feature_frame(_cards([T0, T0 + timedelta(minutes=30)]), POOLS, _reclaims([]))
    out = labels(f, _reclaims([]), [60], until=T0 + timedelta(minutes=70))
    assert out["time"].unique().to_list() == [T0]


def test_a_share_never_exceeds_one_when_more_are_reclaimed_than_were_there() -> None:
    reclaims = _reclaims([(timedelta(minutes=m), "a", True) for m in range(1, 12)])
    out = labels(feature_frame(_cards([T0]), POOLS, reclaims), reclaims, [60], until=T0 + timedelta(hours=2))
    assert out.filter(pl.col("pool") == "a")["y_60"][0] == 1.0


@pytest.mark.parametrize(("ago", "counted"), [(timedelta(minutes=59), 1), (timedelta(hours=1), 0), (timedelta(0), 1)])
def test_a_history_counts_the_same_window_as_a_snapshot_at_each_card(ago: timedelta, counted: int) -> None:
    rows = _cards([T0 - timedelta(hours=3), T0]).filter(pl.col("pool") == "a")
    out = window_counts(rows, _reclaims([(-ago, "a", True)]), POOLS, "pool", [("n", timedelta(hours=1))])
    assert out.sort("time")["n"].to_list() == [0, counted]


def test_a_time_literal_compares_as_polars_own_literal_of_the_same_instant() -> None:
    from datetime import timezone

    from orchestration.forecast.features import RECLAIM_SCHEMA, time_lit

    base = datetime(2026, 10, 1, 12, 0, 0, 123456, tzinfo=UTC)
    times = [base + timedelta(microseconds=k) for k in range(-3000, 3000, 7)] + [base, base + timedelta(days=400)]
    frame = pl.DataFrame([(t, "p", True) for t in times], schema=RECLAIM_SCHEMA, orient="row")   # ms column
    for when in (base, base + timedelta(microseconds=500), base - timedelta(milliseconds=1),
                 base.astimezone(timezone(timedelta(hours=-5)))):
        ours = frame.select((pl.col("time") > time_lit(when)).alias("gt"),
                            (pl.col("time") <= time_lit(when)).alias("le"))
        theirs = frame.select((pl.col("time") > when).alias("gt"), (pl.col("time") <= when).alias("le"))
        assert ours.equals(theirs), when
        assert 0 < ours["gt"].sum() < len(frame)
