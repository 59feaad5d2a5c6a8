"""The forecast's frames from the ClickHouse history (``rate_cards``, ``events``, ``provider_pools``), the model
fitted on them, and the forecast for the latest card. The replay builds the same frames from its feed
(``sco.commands.simulate_controller``); the features are computed by ``features`` in both.

The history holds no forward calendar (the provider's forward capacity is read live), so the training rows carry
``forward_free`` null and only the forecast's own card has it: the model is fitted on what history shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import polars as pl

from ..catalogue import load_catalogue
from ..rankings import RECLAIM_FILTER
from ..store import ClickHouse, utc
from .features import CARD_SCHEMA, POOL_SCHEMA, RECLAIM_SCHEMA, feature_frame, labels
from .model import Forecaster, fit, training_cards

__all__ = ["LOOKBACK", "PoolForecast", "cards_frame", "declared_horizons", "forecast_frame", "latest_features",
           "pools_frame", "reclaims_frame", "train_from_history"]

LOOKBACK = timedelta(days=7)   # the longest feature window: reclaims this far back feed a sample's features


@dataclass(frozen=True)
class PoolForecast:
    """A pool's forecast: P(reclaimed within 1 h), each horizon's split, and the model that made it."""

    reclaim_p_1h: float
    reclaim_p: dict[str, dict[str, float]]
    model_version: str


def cards_frame(ch: ClickHouse, region: str, t0: datetime, t1: datetime) -> pl.DataFrame:
    """Every rate-card row in (t0, t1]."""
    rows = ch.rows("SELECT time, pool, toFloat64(rate_eur_h), toFloat64(guaranteed_rate_eur_h), free_instances, "
                   "capacity, instances FROM rate_cards WHERE region = {r:String} AND time > {t0:DateTime64(3)} "
                   "AND time <= {t1:DateTime64(3)} ORDER BY time, pool", {"r": region, "t0": t0, "t1": t1})
    return pl.DataFrame([(utc(r[0]), str(r[1]), float(r[2]), float(r[3]), int(r[4]), int(r[5]), int(r[6]), None)
                         for r in rows], schema=CARD_SCHEMA, orient="row")


def reclaims_frame(ch: ClickHouse, region: str, t0: datetime, t1: datetime) -> pl.DataFrame:
    """Each instance reclaimed in (t0, t1] once, at its first notice or no-notice loss; drills never count."""
    rows = ch.rows(f"SELECT min(time), pool, argMin(kind, time) = 'notice' FROM events WHERE region = {{r:String}} "
                   f"AND {RECLAIM_FILTER} AND time > {{t0:DateTime64(3)}} AND time <= {{t1:DateTime64(3)}} "
                   "GROUP BY pool, instance", {"r": region, "t0": t0, "t1": t1})
    return pl.DataFrame([(utc(r[0]), str(r[1]), bool(r[2])) for r in rows], schema=RECLAIM_SCHEMA,
                        orient="row").sort("time")


def pools_frame(ch: ClickHouse, region: str, groups: Mapping[str, str]) -> pl.DataFrame:
    """The active reclaimable pools with their aggregate, hall, vCPU and learned group (the aggregate when no
    group was learned for the pool, ADR-05)."""
    return pl.DataFrame([(p.pool, p.aggregate, p.hall, p.vcpu, groups.get(p.pool) or p.aggregate)
                         for p in load_catalogue(ch, region, "reclaimable")], schema=POOL_SCHEMA, orient="row")


def train_from_history(ch: ClickHouse, region: str, now: datetime, days: int, horizons: Sequence[int],
                       groups: Mapping[str, str]) -> Forecaster:
    """Fit on the samples of the ``days`` before ``now`` whose horizons have ended. Raises ValueError when the
    window holds nothing to learn from."""
    start = now - timedelta(days=days)
    cards = cards_frame(ch, region, start, now)
    reclaims = reclaims_frame(ch, region, start - LOOKBACK, now)
    if cards.is_empty():
        raise ValueError(f"no rate card between {start.isoformat()} and {now.isoformat()}: nothing to fit")
    cards, window = training_cards(cards, horizons, now)
    frame = labels(feature_frame(cards, pools_frame(ch, region, groups), reclaims), reclaims, horizons, until=now)
    if frame.is_empty():
        raise ValueError(f"no sample before {now.isoformat()} whose horizon has ended: nothing to fit")
    return fit(frame, horizons, window)


def forecast_frame(model: Forecaster, features: pl.DataFrame) -> dict[str, PoolForecast]:
    """The forecast per pool of ``features`` (one row per pool: the latest card's)."""
    p = model.predict(features)
    out = {}
    for n, pool in enumerate(features["pool"].to_list()):
        split = {str(h): model.split(float(p[h][n]), h) for h in model.horizons_min}
        one_hour = float(p[60][n]) if 60 in p else sum(split[str(max(model.horizons_min))].values())
        out[str(pool)] = PoolForecast(round(one_hour, 6), split, model.version)
    return out


def latest_features(ch: ClickHouse, region: str, now: datetime, groups: Mapping[str, str],
                    forward_free: Mapping[str, int] | None) -> pl.DataFrame:
    """The features of each pool's latest card at or before ``now`` (its forward capacity from the provider)."""
    cards = cards_frame(ch, region, now - timedelta(hours=1), now)
    if cards.is_empty():
        return cards
    cards = cards.filter(pl.col("time") == pl.col("time").max().over("pool"))
    ahead = forward_free or {}
    cards = cards.with_columns(pl.col("pool").map_elements(lambda p: float(ahead[p]) if p in ahead else None,
                                                          return_dtype=pl.Float64).alias("forward_free"))
    reclaims = reclaims_frame(ch, region, now - LOOKBACK - timedelta(hours=1), now)
    return feature_frame(cards, pools_frame(ch, region, groups), reclaims)


def declared_horizons(pg: Any) -> tuple[int, ...]:
    """1 h and the longest checkpoint interval the contracts in force declare (``horizons_for``)."""
    import json

    from .model import horizons_for

    with pg.connection() as conn:
        rows = conn.execute("SELECT spec FROM contracts_in_force").fetchall()
    specs = [r[0] if isinstance(r[0], dict) else json.loads(r[0]) for r in rows]
    return horizons_for([s.get("checkpoint_interval_min") for s in specs])
