"""Yesterday's published forecast scored on yesterday's realised reclaims, beside the baselines (the asset check).

The forecast scored is the one the rankings published (``reclaim_p_1h`` kept with each ranking's inputs in
ClickHouse), at each ranking time, for each pool; its outcome is the share of the pool's instances (the latest card
at that time) reclaimed in the next hour. Each baseline is fitted (isotonic) on the week before yesterday and
applied at the same rankings. The result is kept in ``forecast_scores`` for the fleet page.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

import numpy as np
import polars as pl

from ..store import ClickHouse, utc
from .evaluate import Score, baseline_scores, brier, log_loss, reliability_bins
from .features import TIME, feature_frame, labels
from .history import LOOKBACK, cards_frame, pools_frame, reclaims_frame

__all__ = ["SCORE_COLUMNS", "DailyScore", "score_day", "write_score", "yesterday"]

HORIZON = 60
SCORE_COLUMNS = ("scored_at", "region", "day", "horizon_min", "model_version", "samples", "forecast_log_loss",
                 "forecast_brier", "baselines", "reliability", "passed")


@dataclass(frozen=True)
class DailyScore:
    day: datetime
    samples: int
    model_version: str
    forecast: Score
    baselines: tuple[Score, ...]
    reliability: list[tuple[float, float, float]]

    @property
    def passed(self) -> bool:
        """Below the best baseline on both log-loss and Brier score."""
        return (self.forecast.log_loss < min(b.log_loss for b in self.baselines)
                and self.forecast.brier < min(b.brier for b in self.baselines))


def _published(ch: ClickHouse, region: str, t0: datetime, t1: datetime) -> pl.DataFrame:
    rows = ch.rows("SELECT ranked_at, pool, JSONExtractFloat(inputs, 'reclaim_p_1h'), "
                   "JSONExtractString(inputs, 'model_version') FROM rankings WHERE region = {r:String} "
                   "AND ranked_at >= {t0:DateTime64(3)} AND ranked_at < {t1:DateTime64(3)} "
                   "AND JSONHas(inputs, 'reclaim_p_1h')", {"r": region, "t0": t0, "t1": t1})
    return pl.DataFrame([(utc(r[0]), str(r[1]), float(r[2]), str(r[3])) for r in rows],
                        schema={"time": TIME, "pool": pl.String, "p": pl.Float64, "version": pl.String}, orient="row")


def score_day(ch: ClickHouse, region: str, day: datetime, groups: Mapping[str, str],
              now: datetime) -> DailyScore | None:
    """The forecast published on ``day`` (a UTC date at midnight) against the baselines, on the outcomes known
    by ``now`` (a forecast whose hour has not ended is left out); None when nothing was published that day, or no
    outcome is known yet."""
    t0, t1 = day, day + timedelta(days=1)
    known = min(t1 + timedelta(minutes=HORIZON), now)
    published = _published(ch, region, t0, t1).sort("time")
    if published.is_empty():
        return None
    pools = pools_frame(ch, region, groups)
    reclaims = reclaims_frame(ch, region, t0 - 2 * LOOKBACK, known)
    cards = cards_frame(ch, region, t0 - LOOKBACK, t1).sort("time")
    # each published forecast with the pool's latest card at its time, re-timed to the ranking
    at = published.join_asof(cards.rename({"time": "card_time"}), left_on="time", right_on="card_time", by="pool",
                             strategy="backward").drop_nulls("instances")
    test = labels(feature_frame(at.drop("p", "version", "card_time"), pools, reclaims)
                  .join(at.select("time", "pool", "p", "version"), on=["time", "pool"]), reclaims, [HORIZON],
                  until=known)
    train = labels(feature_frame(cards.filter(pl.col("time") < t0), pools, reclaims), reclaims, [HORIZON], until=t0)
    y, w = test[f"y_{HORIZON}"].to_numpy(), test["instances"].to_numpy().astype(float)
    if test.is_empty() or train.is_empty() or not w.sum():
        return None
    p = test["p"].to_numpy()
    versions = sorted(set(test["version"].to_list()))
    return DailyScore(day, len(test), ",".join(versions), Score("forecast", log_loss(p, y, w), brier(p, y, w)),
                      tuple(baseline_scores(train, test, HORIZON)), reliability_bins(np.asarray(p), y, w))


def write_score(ch: ClickHouse, region: str, now: datetime, s: DailyScore) -> int:
    """Record one day's forecast score in ``forecast_scores``; the number of rows written."""
    return ch.insert("forecast_scores", [(now, region, s.day.date(), HORIZON, s.model_version, s.samples,
                                          s.forecast.log_loss, s.forecast.brier,
                                          json.dumps({b.name: [b.log_loss, b.brier] for b in s.baselines}),
                                          json.dumps(s.reliability), s.passed)], SCORE_COLUMNS)


def yesterday(now: datetime) -> datetime:
    """Midnight UTC at the start of the day before ``now``'s."""
    return datetime.combine(now.astimezone(UTC).date() - timedelta(days=1), time(), tzinfo=UTC)
