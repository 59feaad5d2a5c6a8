"""The weighted binning served from one sort a feature (``orchestration.forecast.binning``) gives scikit-learn's
own thresholds, and the fit with it the very model scikit-learn fits without it."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.ensemble._hist_gradient_boosting import binning

from orchestration.forecast.binning import one_sort_per_feature


def _column(rng: np.random.Generator, kind: str, n: int = 3000) -> tuple[np.ndarray, np.ndarray]:
    x = {"smooth": rng.normal(size=n), "ties": rng.integers(0, 120, n).astype(float),
         "few": rng.integers(0, 9, n).astype(float), "skewed": rng.exponential(size=n) ** 3}[kind]
    w = rng.exponential(size=n)
    w[rng.random(n) < 0.2] = 0.0          # zero-weight rows are left out of the thresholds
    if kind == "ties":
        x[rng.random(n) < 0.05] = np.nan  # missing values too
    return x, w


@pytest.mark.parametrize("kind", ["smooth", "ties", "few", "skewed"])
@pytest.mark.parametrize("max_bins", [63, 255, 10])
def test_the_thresholds_are_scikit_learns_own_on_weighted_columns(kind: str, max_bins: int) -> None:
    rng = np.random.default_rng(max_bins)
    x, w = _column(rng, kind)
    want = binning._find_binning_thresholds(x, max_bins, w)
    with one_sort_per_feature(max_bins):
        got = binning._find_binning_thresholds(x, max_bins, w)
    assert np.array_equal(got, want)


def test_a_grid_other_than_the_estimators_is_served_by_scikit_learn_unchanged() -> None:
    x, w = _column(np.random.default_rng(3), "smooth")
    with one_sort_per_feature(63):   # another estimator's 31 bins: percentiles not on this grid
        got = binning._find_binning_thresholds(x, 31, w)
    assert np.array_equal(got, binning._find_binning_thresholds(x, 31, w))


def test_the_fit_is_the_same_model_and_the_function_is_put_back() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(4000, 6))
    y = (rng.random(4000) < 1 / (1 + np.exp(-x[:, 0]))).astype(float)
    w = rng.exponential(size=4000)
    params = {"max_bins": 63, "max_iter": 20, "random_state": 0, "early_stopping": False}
    want = HistGradientBoostingClassifier(**params).fit(x, y, sample_weight=w).predict_proba(x)
    original = binning._weighted_percentile
    with one_sort_per_feature(63):
        got = HistGradientBoostingClassifier(**params).fit(x, y, sample_weight=w).predict_proba(x)
    assert np.array_equal(got, want) and binning._weighted_percentile is original
