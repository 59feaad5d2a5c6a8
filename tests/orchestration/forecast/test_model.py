"""The forecast's model and its judges (``orchestration.forecast.model``, ``evaluate``): the scores, the binary
rows, the horizons, the reliability bins, and the model against the baselines on days it was not fitted on."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import polars as pl
import pytest

from orchestration.forecast.evaluate import brier, log_loss, reliability_bins, score_forecast
from orchestration.forecast.model import binary_rows, fit, horizons_for


@pytest.mark.parametrize(("declared", "horizons"), [
    ([], (60,)), ([None, 30, 45], (45, 60)), ([90, 30], (60, 90)), ([60], (60,))])
def test_the_horizons_are_an_hour_and_the_longest_checkpoint_interval_declared(declared: list[int | None],
                                                                               horizons: tuple[int, ...]) -> None:
    assert horizons_for(declared) == horizons


def test_a_sample_is_two_weighted_binary_rows_and_an_empty_side_is_left_out() -> None:
    x = np.array([[1.0], [2.0]])
    xx, yy, ww = binary_rows(x, np.array([0.25, 0.0]), np.array([8.0, 4.0]))
    assert sorted(zip(xx[:, 0], yy, ww, strict=True)) == [(1.0, 0.0, 6.0), (1.0, 1.0, 2.0), (2.0, 0.0, 4.0)]


@pytest.mark.parametrize(("p", "y", "ll", "b"), [
    (0.5, 0.5, np.log(2), 0.25),
    (0.1, 0.0, -np.log(0.9), 0.01),
    (0.1, 1.0, -np.log(0.1), 0.81),
])
def test_the_scores_are_per_instance(p: float, y: float, ll: float, b: float) -> None:
    pp, yy, ww = np.array([p, p]), np.array([y, y]), np.array([3.0, 1.0])
    assert log_loss(pp, yy, ww) == pytest.approx(ll) and brier(pp, yy, ww) == pytest.approx(b)


def test_reliability_bins_hold_equal_instances_and_a_calibrated_forecast_lies_on_the_diagonal() -> None:
    rng = np.random.default_rng(1)
    p = rng.uniform(0, 0.2, 20_000)
    y = (rng.uniform(size=p.size) < p).astype(float)
    bins = reliability_bins(p, y, np.ones(p.size), n_bins=5)
    assert len(bins) == 5 and all(w == pytest.approx(4000, abs=1) for _, _, w in bins)
    assert all(abs(f - o) < 0.015 for f, o, _ in bins)


@pytest.mark.slow
def test_the_model_beats_every_baseline_on_days_it_was_not_fitted_on() -> None:
    from orchestration.forecast.features import feature_frame, labels
    from testkit.forecast_history import START, simulated_history

    cards, pools, reclaims = simulated_history(seed=5, days=10, pools=40)
    frame = labels(feature_frame(cards, pools, reclaims), reclaims, [60])
    split = START + timedelta(days=7)
    train = frame.filter(pl.col("time") + timedelta(hours=1) <= split)
    test = frame.filter(pl.col("time") >= split)
    model = fit(train, [60])
    assert model.version.startswith("hgb-") and model.trained_until < split
    ours, baselines, bins = score_forecast(model, train, test, 60)
    for b in baselines:
        assert ours.log_loss < b.log_loss and ours.brier < b.brier, (ours, b)
    assert bins and 0 < model.no_notice_share[60] < 0.1   # the region's 2 % of reclaims without notice


@pytest.mark.slow
def test_the_training_cards_chosen_before_the_features_fit_the_very_model_the_whole_window_fits() -> None:
    from orchestration.forecast.features import feature_frame, labels
    from orchestration.forecast.model import training_cards
    from testkit.forecast_history import START, simulated_history

    cards, pools, reclaims = simulated_history(seed=6, days=3, pools=20)
    until = START + timedelta(days=2, minutes=17)   # some cards' horizons end after it, some not
    whole = fit(labels(feature_frame(cards, pools, reclaims), reclaims, [45, 60], until=until), [45, 60])
    chosen, window = training_cards(cards, [45, 60], until)
    assert window is not None and chosen["time"].n_unique() < cards["time"].n_unique() / 5
    sampled = fit(labels(feature_frame(chosen, pools, reclaims), reclaims, [45, 60], until=until), [45, 60], window)
    assert (sampled.version, sampled.samples, sampled.trained_from, sampled.trained_until, sampled.no_notice_share) \
        == (whole.version, whole.samples, whole.trained_from, whole.trained_until, whole.no_notice_share)
    probe = feature_frame(cards.filter(pl.col("time") == cards["time"].max()), pools, reclaims)
    for h in (45, 60):
        assert np.array_equal(sampled.predict(probe)[h], whole.predict(probe)[h])
