"""The reclaim forecast's model: per horizon, a scikit-learn gradient-boosted classifier on ``features.FEATURES``,
fitted on labelled (pool, time) samples (each pool's instances at t, reclaimed within the horizon or not), the
no-notice share of reclaims estimated on the same window, and a version that hashes the training window and the
parameters so every ranking says which model wrote it.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from .binning import one_sort_per_feature
from .features import FEATURES, TIME
from .forest import Forest, compile_forest

__all__ = ["EPS", "PARAMS", "Forecaster", "binary_rows", "fit", "horizons_for", "load", "save", "training_cards"]

EPS = 1e-4   # probabilities are held to [EPS, 1 - EPS]: a forecast of 0 or 1 scores an infinite log-loss
PARAMS: Mapping[str, Any] = {"learning_rate": 0.1, "max_iter": 100, "max_bins": 63, "max_leaf_nodes": 15,
                             "min_samples_leaf": 200, "l2_regularization": 1.0, "early_stopping": False,
                             "random_state": 0}
SAMPLE_EVERY_MIN = 30   # training samples: every sixth five-minute card (neighbouring cards share most outcomes)


def horizons_for(checkpoint_intervals_min: Sequence[int | None]) -> tuple[int, ...]:
    """The horizons to forecast, in minutes: one hour and the longest checkpoint interval declared."""
    declared = [int(m) for m in checkpoint_intervals_min if m]
    return tuple(sorted({60, *([max(declared)] if declared else [])}))


def binary_rows(x: np.ndarray, share: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each sample (``weight`` instances, a ``share`` of them reclaimed) as two weighted binary rows: the
    reclaimed (label 1) and the rest (label 0). Rows of zero weight are left out."""
    pos, neg = weight * share, weight * (1.0 - share)
    xx = np.concatenate([x, x])
    yy = np.concatenate([np.ones(len(x)), np.zeros(len(x))])
    ww = np.concatenate([pos, neg])
    keep = ww > 0
    return xx[keep], yy[keep], ww[keep]


@dataclass
class Forecaster:
    """One fitted model per horizon, with the no-notice share of reclaims and the version."""

    horizons_min: tuple[int, ...]
    models: dict[int, Any]
    no_notice_share: dict[int, float]
    version: str
    trained_from: datetime
    trained_until: datetime
    samples: int
    features: tuple[str, ...] = field(default=FEATURES)
    # each horizon's model compiled by ``forest`` on first use: a cache, never pickled (``__getstate__``), so a
    # saved model's bytes are what they were
    _forests: dict[int, Forest] = field(default_factory=dict, init=False, repr=False, compare=False)

    def predict(self, frame: pl.DataFrame) -> dict[int, np.ndarray]:
        """Per horizon, P(an instance of the row's pool is reclaimed within it), one value per row of ``frame``
        (a ``features.feature_frame``): the model's ``predict_proba``, computed by ``forest`` (the same floats)."""
        x = frame.select(self.features).to_numpy().astype(np.float64)
        if not len(x):
            return {h: np.zeros(0) for h in self.horizons_min}
        return {h: np.clip(self._forest(h).predict_proba1(x), EPS, 1 - EPS) for h in self.horizons_min}

    def _forest(self, horizon: int) -> Forest:
        model = self.models[horizon]
        forest = self._forests.get(horizon)
        if forest is None or forest.model is not model:   # compiled from a model another has replaced since
            forest = self._forests[horizon] = compile_forest(model)
        return forest

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_forests", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._forests = {}   # a pickle never holds the cache, an old one no more than a new one

    def split(self, p: float, horizon: int) -> dict[str, float]:
        """``p`` (reclaimed within ``horizon``) split into with notice and without."""
        nn = self.no_notice_share[horizon]
        return {"notice": round(p * (1.0 - nn), 6), "no_notice": round(p * nn, 6)}


def _version(start: datetime, end: datetime, horizons: Sequence[int], samples: int, data: str) -> str:
    body = json.dumps({"from": start.isoformat(), "until": end.isoformat(), "horizons": list(horizons),
                       "samples": samples, "data": data, "features": list(FEATURES), "params": dict(PARAMS),
                       "sample_every_min": SAMPLE_EVERY_MIN}, sort_keys=True)
    return "hgb-" + hashlib.sha256(body.encode()).hexdigest()[:16]


def _sampled(frame: pl.DataFrame) -> pl.DataFrame:
    """The rows a fit learns from: every ``SAMPLE_EVERY_MIN``-th minute's, or all of them when none falls on one."""
    sample = frame.filter((frame["time"].dt.minute() % SAMPLE_EVERY_MIN) == 0) if SAMPLE_EVERY_MIN > 5 else frame
    return sample if len(sample) else frame


def training_cards(cards: pl.DataFrame, horizons_min: Sequence[int], until: datetime
                   ) -> tuple[pl.DataFrame, tuple[datetime, datetime] | None]:
    """The cards a fit at ``until`` learns from, chosen before any feature is computed — those whose longest horizon
    has ended (``features.labels`` drops the rest), sampled as ``fit`` samples — and the window the ended ones span
    (the model's version names it; None when none has ended). A feature row depends only on its own card time, so
    the features and labels of these cards are the rows ``fit`` would have kept from the whole window's: a sixth
    of the work of a training frame."""
    longest = timedelta(minutes=max(horizons_min))
    ended = cards.filter(pl.col("time") + longest <= pl.lit(until).cast(TIME))
    if ended.is_empty():
        return ended, None
    start, end = ended["time"].min(), ended["time"].max()
    assert isinstance(start, datetime) and isinstance(end, datetime)
    return _sampled(ended), (start, end)


def fit(train: pl.DataFrame, horizons_min: Sequence[int], window: tuple[datetime, datetime] | None = None
        ) -> Forecaster:
    """Fit on ``train`` (``features.feature_frame`` rows with ``features.labels``' columns; ``window``: the training
    window's first and last card, default ``train``'s). Raises ValueError when the window holds no reclaim or no
    instance (nothing to learn from)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    sample = _sampled(train)
    x = sample.select(FEATURES).to_numpy().astype(np.float64)
    w = sample["instances"].to_numpy().astype(np.float64)
    models, nn_share = {}, {}
    for h in horizons_min:
        y = sample[f"y_{h}"].to_numpy()
        if not (w * y).sum() or not w.sum():
            raise ValueError(f"the training window has no reclaim within {h} min (or no instance): nothing to fit")
        xx, yy, ww = binary_rows(x, y, w)
        with one_sort_per_feature(PARAMS["max_bins"]):   # scikit-learn's thresholds, a feature sorted once
            models[h] = HistGradientBoostingClassifier(**PARAMS).fit(xx, yy, sample_weight=ww)
        nn = float((w * sample[f"y_{h}_nn"].to_numpy()).sum())
        nn_share[h] = (nn + 0.5) / (float((w * y).sum()) + 1.0)
    start, end = window or (train["time"].min(), train["time"].max())
    assert isinstance(start, datetime) and isinstance(end, datetime)
    # the window's own data in the version too: two regions (or seeds) over the same dates are two models
    data = hashlib.sha256(x.tobytes() + sample.select(f"y_{h}" for h in horizons_min).to_numpy().tobytes()).hexdigest()
    return Forecaster(tuple(horizons_min), models, nn_share,
                      _version(start, end, horizons_min, len(sample), data[:16]), start, end, len(sample))


def save(model: Forecaster, path: Path) -> None:
    """Write ``model`` atomically (a reader never sees half of one)."""
    buf = io.BytesIO()
    pickle.dump(model, buf)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(buf.getvalue())
    tmp.replace(path)


def load(path: Path) -> Forecaster | None:
    """The model saved at ``path``, or None when there is none (no model fitted yet)."""
    if not path.exists():
        return None
    model = pickle.loads(path.read_bytes())
    return model if isinstance(model, Forecaster) else None
