"""The forecast's trees walked at once (``orchestration.forecast.forest``): the very floats of scikit-learn's
``predict_proba`` (compared with ``np.array_equal``), on rows at a split's threshold, NaN and infinite rows, the
forecast's own models and a plain classifier; the fallback for what the walk does not cover; and a saved
forecaster's pickle without the compiled trees."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from orchestration.forecast.features import FEATURES
from orchestration.forecast.forest import compile_forest
from orchestration.forecast.model import EPS, Forecaster, fit, load, save

T0 = datetime(2026, 3, 2, tzinfo=UTC)   # a Monday
HORIZONS = (45, 60)


def _frame(seed: int, times: int = 70, pools: int = 40) -> pl.DataFrame:
    """A ``feature_frame`` with ``labels``' columns: every half hour (the cards ``fit`` samples), counts of recent
    reclaims as small integers, ``forward_drop`` missing where a pool has no forward calendar, and reclaims more
    likely in a full pool with recent reclaims."""
    rng = np.random.default_rng(seed)
    n = times * pools
    time = [T0 + timedelta(minutes=30 * (k // pools)) for k in range(n)]
    hour = np.array([t.hour + t.minute / 60 for t in time])
    cols: dict[str, Any] = {f: rng.uniform(0, 1, n) for f in FEATURES}
    cols |= {"hour_sin": np.sin(2 * np.pi * hour / 24), "hour_cos": np.cos(2 * np.pi * hour / 24),
             "weekday": np.array([float(t.weekday()) for t in time]),
             "price_ratio": rng.choice([0.5, 0.8, 1.0, 1.2], n), "burst": rng.poisson(1.0, n) + 0.1}
    for f in ("pool_rate_1h", "pool_rate_6h", "pool_rate_24h", "hall_reclaims_24h"):
        cols[f] = rng.poisson(1.5, n).astype(float)
    cols["forward_drop"] = np.where(rng.uniform(size=n) < 0.2, np.nan, rng.uniform(-0.2, 0.6, n))
    instances = rng.integers(1, 30, n)
    logit = (-4 + 2 * (1 - cols["free_share"]) + 0.4 * cols["pool_rate_1h"] + np.nan_to_num(cols["forward_drop"], nan=1)
             + 0.5 * cols["hour_sin"])
    frame = pl.DataFrame({"time": time, "pool": [f"p{k % pools}" for k in range(n)], "instances": instances, **cols})
    for h in HORIZONS:
        reclaimed = rng.binomial(instances, 1 / (1 + np.exp(-logit * h / 60)))
        frame = frame.with_columns(pl.Series(f"y_{h}", reclaimed / instances),
                                   pl.Series(f"y_{h}_nn", rng.binomial(reclaimed, 0.1) / instances))
    return frame


@pytest.fixture(scope="module")
def forecaster() -> Forecaster:
    return fit(_frame(seed=1), HORIZONS)


def _held_out(model: Any, seed: int) -> np.ndarray:
    """Rows the model was not fitted on; then, per split of every tree, a row at exactly its threshold and one just
    above it, a row whose feature is NaN and one where it is -inf; then rows with NaN at random."""
    rng = np.random.default_rng(seed)
    base = _frame(seed).select(FEATURES).to_numpy().astype(np.float64)
    nodes = np.concatenate([trees[0].nodes for trees in model._predictors])
    splits = nodes[~nodes["is_leaf"].astype(bool)]
    edges, picks = [], rng.integers(0, len(base), len(splits))
    for value in (splits["num_threshold"], np.nextafter(splits["num_threshold"], np.inf),
                  np.full(len(splits), np.nan), np.full(len(splits), -np.inf)):
        x = base[picks]
        x[np.arange(len(splits)), splits["feature_idx"]] = value
        edges.append(x)
    holes = base[:500].copy()
    holes[rng.uniform(size=holes.shape) < 0.1] = np.nan
    return np.concatenate([base, *edges, holes])


def _depths(model: Any) -> set[int]:
    return {trees[0].get_max_depth() for trees in model._predictors}


@pytest.mark.parametrize("horizon", HORIZONS)
def test_the_walk_gives_the_very_probabilities_of_the_forecast_models_predict_proba(forecaster: Forecaster,
                                                                                     horizon: int) -> None:
    model = forecaster.models[horizon]
    forest = compile_forest(model)
    x = _held_out(model, seed=2)
    assert forest.vectorised and len(_depths(model)) >= 3
    ours, theirs = forest.predict_proba1(x), model.predict_proba(x)[:, 1]
    assert np.array_equal(ours, theirs)
    # the rows at a threshold and just above it part ways somewhere: a walk taking "<" for "<=" would show
    splits = int((~np.concatenate([t[0].nodes for t in model._predictors])["is_leaf"].astype(bool)).sum())
    at = len(x) - 500 - 4 * splits
    assert not np.array_equal(theirs[at:at + splits], theirs[at + splits:at + 2 * splits])


def test_the_walk_gives_the_very_probabilities_of_a_classifier_of_deep_trees_fitted_with_missing_values() -> None:
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(3)
    x = rng.normal(size=(4000, 8))
    y = (x[:, 0] + x[:, 1] * x[:, 2] + rng.normal(scale=0.5, size=len(x)) > 0).astype(float)
    x[rng.uniform(size=x.shape) < 0.05] = np.nan   # missing in training: a learnt side at every split
    model = HistGradientBoostingClassifier(max_leaf_nodes=31, max_iter=50, random_state=0).fit(x, y)
    forest = compile_forest(model)
    probe = rng.normal(size=(3000, 8))
    probe[rng.uniform(size=probe.shape) < 0.1] = np.nan
    nodes = np.concatenate([t[0].nodes for t in model._predictors])
    splits = nodes[~nodes["is_leaf"].astype(bool)]
    probe[np.arange(len(splits)) % len(probe), splits["feature_idx"]] = splits["num_threshold"]
    probe[:5, 3] = [np.inf, -np.inf, np.inf, -np.inf, np.nan]
    assert forest.vectorised and max(_depths(model)) >= 8 and len(_depths(model)) >= 3
    assert set(splits["missing_go_to_left"]) == {0, 1}
    assert np.array_equal(forest.predict_proba1(probe), model.predict_proba(probe)[:, 1])


def test_a_forecaster_saved_and_loaded_predicts_the_same_and_its_pickle_holds_no_compiled_trees(
        forecaster: Forecaster, tmp_path: Path) -> None:
    frame = _frame(seed=4, times=6)
    save(forecaster, tmp_path / "before.pkl")
    ours = forecaster.predict(frame)
    save(forecaster, tmp_path / "after.pkl")   # after a predict has compiled both horizons' trees
    assert set(forecaster._forests) == set(HORIZONS)
    written = (tmp_path / "after.pkl").read_bytes()
    assert written == (tmp_path / "before.pkl").read_bytes() and b"forest" not in written.lower()
    loaded = load(tmp_path / "after.pkl")
    assert loaded is not None and loaded._forests == {} and loaded.version == forecaster.version
    theirs = loaded.predict(frame)
    x = frame.select(FEATURES).to_numpy()
    for h in HORIZONS:
        assert np.array_equal(ours[h], theirs[h])
        assert np.array_equal(ours[h], np.clip(forecaster.models[h].predict_proba(x)[:, 1], EPS, 1 - EPS))
    assert pickle.dumps(loaded) == pickle.dumps(load(tmp_path / "after.pkl"))   # one that has predicted, one not


def test_a_model_the_walk_does_not_cover_is_served_by_its_own_predict_proba() -> None:
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(5)
    x = np.column_stack([rng.integers(0, 6, 2000), rng.normal(size=2000)]).astype(np.float64)
    y = ((x[:, 0] % 2 == 0) ^ (x[:, 1] > 0)).astype(float)
    categorical = HistGradientBoostingClassifier(categorical_features=[0], max_iter=20, random_state=0).fit(x, y)
    three = HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(x, y + (x[:, 1] > 1))
    for model in (categorical, three):
        forest = compile_forest(model)
        assert not forest.vectorised
        assert np.array_equal(forest.predict_proba1(x), model.predict_proba(x)[:, 1])
    assert any(t[0].nodes["is_categorical"].any() for t in categorical._predictors)
    covered = compile_forest(HistGradientBoostingClassifier(max_iter=5).fit(x, y))
    assert covered.vectorised   # and an input it does not take goes to scikit-learn too
    x32 = x.astype(np.float32)
    assert np.array_equal(covered.predict_proba1(x32), covered.model.predict_proba(x32)[:, 1])
