"""The forecast judged as a forecaster's work: log-loss and Brier score on days it was not fitted on, beside
baselines measured on the same samples, and the reliability diagram's bins.

Every sample is a pool at a card time holding ``instances`` instances of which a share ``y`` was reclaimed within
the horizon: each instance is one Bernoulli outcome, so the scores are weighted by ``instances``. A baseline is one
signal (price rank, the last 24 h's reclaim rate, today's composite score) mapped to a probability fairly: an
isotonic regression fitted on the training days (the best monotone map from that signal alone).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from contracts.scoring import composite_score

from .model import EPS, Forecaster

__all__ = ["BASELINES", "Score", "baseline_scores", "baseline_signals", "brier", "fit_baseline", "log_loss",
           "reliability_bins", "score_forecast"]


def log_loss(p: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Mean log-loss per instance: ``w`` instances, a share ``y`` reclaimed, forecast ``p``."""
    p = np.clip(p, EPS, 1 - EPS)
    return float(-(w * (y * np.log(p) + (1 - y) * np.log(1 - p))).sum() / w.sum())


def brier(p: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Mean Brier score per instance (each instance's outcome is 0 or 1: a share ``y`` of them are 1)."""
    return float((w * (y * (1 - p) ** 2 + (1 - y) * p ** 2)).sum() / w.sum())


def _composite(frame: pl.DataFrame) -> np.ndarray:
    """Today's scorer on the same rows: depth (forward share), calm (the week's reclaims per 100 instance-hours),
    price; higher is better, so a pool's risk is its negation."""
    rows = frame.select("forward_share", "pool_rate_7d", "price_ratio").to_numpy()
    return -np.array([composite_score(float(d), 100.0 * float(r), float(pr)) for d, r, pr in rows])


def _price_rank(frame: pl.DataFrame) -> np.ndarray:
    """The pool's rank by price ratio among the pools of the same card (1: the cheapest)."""
    return frame.select(pl.col("price_ratio").rank("average").over("time")).to_series().to_numpy().astype(float)


BASELINES: Mapping[str, Callable[[pl.DataFrame], np.ndarray]] = {
    "price rank alone": _price_rank,
    "last-24 h reclaim rate": lambda f: f["pool_rate_24h"].to_numpy(),
    "today's composite scorer": _composite,
}


def baseline_signals(frame: pl.DataFrame) -> dict[str, np.ndarray]:
    """Each baseline's raw signal on ``frame``'s rows (higher: riskier, or the isotonic map learns the sign)."""
    return {name: fn(frame) for name, fn in BASELINES.items()}


def fit_baseline(signal: np.ndarray, y: np.ndarray, w: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The isotonic map (direction learned) from a signal to P(reclaimed), fitted on training samples."""
    from sklearn.isotonic import IsotonicRegression

    keep = w > 0
    iso = IsotonicRegression(increasing="auto", out_of_bounds="clip", y_min=EPS, y_max=1 - EPS)
    iso.fit(signal[keep], y[keep], sample_weight=w[keep])
    return lambda s: np.clip(iso.predict(s), EPS, 1 - EPS)


def reliability_bins(p: np.ndarray, y: np.ndarray, w: np.ndarray, n_bins: int = 10) -> list[tuple[float, float, float]]:
    """(mean forecast, observed share, instances) per bin of equal instance weight (quantile bins): the reliability
    diagram's points; a calibrated forecast lies on the diagonal."""
    order = np.argsort(p)
    p, y, w = p[order], y[order], w[order]
    edges = np.searchsorted(np.cumsum(w), np.linspace(0, w.sum(), n_bins + 1)[1:-1])
    out = []
    for part in np.split(np.arange(len(p)), edges):
        ww = w[part].sum()
        if ww > 0:
            out.append((float((w[part] * p[part]).sum() / ww), float((w[part] * y[part]).sum() / ww), float(ww)))
    return out


@dataclass(frozen=True)
class Score:
    """One forecaster's scores on held-out samples."""

    name: str
    log_loss: float
    brier: float


def score_forecast(model: Forecaster, train: pl.DataFrame, test: pl.DataFrame, horizon: int
                   ) -> tuple[Score, list[Score], list[tuple[float, float, float]]]:
    """(the forecast's score, each baseline's score, the forecast's reliability bins) on ``test`` at ``horizon``
    minutes; baselines are calibrated on ``train``. Raises ValueError when ``test`` holds no instance."""
    y, w = test[f"y_{horizon}"].to_numpy(), test["instances"].to_numpy().astype(float)
    if not w.sum():
        raise ValueError("the held-out samples hold no instance: nothing to score")
    p = model.predict(test)[horizon]
    ours = Score("forecast", log_loss(p, y, w), brier(p, y, w))
    return ours, baseline_scores(train, test, horizon), reliability_bins(p, y, w)


def baseline_scores(train: pl.DataFrame, test: pl.DataFrame, horizon: int) -> list[Score]:
    """Each baseline's score on ``test`` at ``horizon`` minutes, its isotonic map calibrated on ``train``."""
    y, w = test[f"y_{horizon}"].to_numpy(), test["instances"].to_numpy().astype(float)
    ty, tw = train[f"y_{horizon}"].to_numpy(), train["instances"].to_numpy().astype(float)
    train_sig, test_sig = baseline_signals(train), baseline_signals(test)
    baselines = []
    for name in BASELINES:
        q = fit_baseline(train_sig[name], ty, tw)(test_sig[name])
        baselines.append(Score(name, log_loss(q, y, w), brier(q, y, w)))
    return baselines
