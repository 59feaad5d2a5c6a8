"""The reclaim forecast in the replay: the replay's five-minute feeds (``PoolFeed``) kept as the forecast's frames
(``orchestration.forecast.features``: the same feature definition as the ClickHouse history's), a model fitted on
them and refitted on a schedule, and each pool's forecast for the ranking in force.

The feeds of the warm-up arrive first (``warm``), so the first model is fitted before the replay starts, on the
same seven days a deployed ranking would have had.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import polars as pl

from controllers.replay.through_controller import PoolFeed

__all__ = ["ReplayForecaster"]

TRAIN = timedelta(days=7)
REFIT_EVERY = timedelta(days=1)


class ReplayForecaster:
    """The forecast over the replay's feeds; ``forecast(now, feeds)`` each five minutes."""

    def __init__(self, horizons_min: Sequence[int], refit_every: timedelta = REFIT_EVERY) -> None:
        self.horizons = tuple(horizons_min)
        self.refit_every = refit_every
        # the cards as frames: one per ``add`` since the last fit, and the window kept at it (a week of cards rebuilt
        # from tuples at each fit cost more than the fit's features)
        self.kept: pl.DataFrame | None = None
        self.added: list[pl.DataFrame] = []
        self.reclaims: list[tuple[datetime, str, bool]] = []
        self.recent: pl.DataFrame | None = None   # the reclaims the features read, kept as a frame between calls
        self.pools: dict[str, tuple[str, str, str, int, str]] = {}
        self.model: Any = None
        self.last_fit: datetime | None = None
        self.fit_error = ""

    def add(self, now: datetime, feeds: Sequence[PoolFeed]) -> pl.DataFrame:
        """Keep one rate card's feeds (the card's own time when it has one); the card as a frame."""
        from orchestration.forecast.features import CARD_SCHEMA

        card = pl.DataFrame([(f.card_at or now, f.pool, f.rate_eur_h, f.guaranteed_rate_eur_h, f.free, f.capacity,
                              f.instances, float(f.forward_free)) for f in feeds], schema=CARD_SCHEMA, orient="row")
        self.added.append(card)
        for f in feeds:
            self.reclaims.extend((t, f.pool, notice) for t, notice in f.new_reclaims)
            if f.pool not in self.pools:
                self.pools[f.pool] = (f.pool, f.aggregate, f.hall, f.vcpu, f.aggregate)
        return card

    def warm(self, history: Sequence[tuple[datetime, Sequence[PoolFeed]]]) -> None:
        """Keep the warm-up's feeds, oldest first, so the first fit has the week a deployed ranking would have had."""
        for when, feeds in history:
            self.add(when, feeds)

    def _frames(self, since: datetime) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        from orchestration.forecast.features import POOL_SCHEMA, RECLAIM_SCHEMA

        cards = self._cards().filter(pl.col("time") > since)
        pools = pl.DataFrame(list(self.pools.values()), schema=POOL_SCHEMA, orient="row")
        reclaims = pl.DataFrame(self.reclaims, schema=RECLAIM_SCHEMA, orient="row")
        return cards, pools, reclaims

    def _cards(self) -> pl.DataFrame:
        """Every card kept, oldest first, as one frame."""
        from orchestration.forecast.features import CARD_SCHEMA

        frames = [f for f in (self.kept, *self.added) if f is not None]
        self.kept = pl.concat(frames, rechunk=True) if frames else pl.DataFrame(schema=CARD_SCHEMA)   # one chunk
        self.added = []
        return self.kept

    def _prune(self, now: datetime) -> None:
        """Keep what the next fit and the features still read: the training window and the longest window."""
        keep = now - TRAIN - timedelta(days=8)
        self.kept = self._cards().filter(pl.col("time") > keep)
        self.reclaims = [r for r in self.reclaims if r[0] > keep]

    def refit(self, now: datetime) -> None:
        """Fit the model afresh on the training window before ``now``; with too little history the previous model stays
        and ``fit_error`` says why."""
        from orchestration.forecast.features import feature_frame, labels
        from orchestration.forecast.model import fit, training_cards

        self._prune(now)
        cards, pools, reclaims = self._frames(now - TRAIN)
        try:
            cards, window = training_cards(cards, self.horizons, now)
            frame = labels(feature_frame(cards, pools, reclaims), reclaims, self.horizons, until=now)
            self.model = fit(frame, self.horizons, window)
            self.fit_error = ""
        except ValueError as exc:   # too little history yet: the columns stay NULL until there is enough
            self.fit_error = str(exc)
        self.last_fit = now

    def forecast(self, now: datetime, feeds: Sequence[PoolFeed]) -> dict[str, Any]:
        """Each pool's ``PoolForecast`` now (empty while no model could be fitted)."""
        from orchestration.forecast.features import POOL_SCHEMA, RECLAIM_SCHEMA, feature_frame, time_lit
        from orchestration.forecast.history import LOOKBACK, forecast_frame

        latest = self.add(now, feeds)
        if self.last_fit is None or now - self.last_fit >= self.refit_every:
            self.refit(now)
        if self.model is None:
            return {}
        since = now - LOOKBACK - timedelta(hours=1)
        new = [(t, f.pool, notice) for f in feeds for t, notice in f.new_reclaims]
        if self.recent is None:   # built from the rows once; afterwards each call adds its few new ones
            recent = self.reclaims[bisect.bisect_right(self.reclaims, since, key=lambda r: r[0]):]
            self.recent = pl.DataFrame(recent, schema=RECLAIM_SCHEMA, orient="row")
        elif new:   # one chunk: a chunk a call kept for the week made every later call's filter and counts walk
            # ~2,000 chunks (10 ms a call by the replay's second week, not the first day's 0.6)
            self.recent = pl.concat([self.recent, pl.DataFrame(new, schema=RECLAIM_SCHEMA, orient="row")],
                                    rechunk=True)
        self.recent = self.recent.filter(pl.col("time") > time_lit(since))
        features = feature_frame(latest, pl.DataFrame(list(self.pools.values()), schema=POOL_SCHEMA, orient="row"),
                                 self.recent)
        return forecast_frame(self.model, features)
