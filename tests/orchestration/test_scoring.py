from __future__ import annotations

from dataclasses import asdict

import pytest

from orchestration.scoring import PoolInputs, interruption_stats, rank_pools, score


def _inputs(pool: str, rate: float = 0.14, guaranteed: float = 0.40, interruption: float = 2.0,
            forward: float = 0.5, quota: float = 1.0) -> PoolInputs:
    return PoolInputs(pool, rate, guaranteed, interruption, None, forward, quota)


@pytest.mark.parametrize(("inputs", "expected"), [
    # depth 0.5 * 0.4 + calm (1 - 2/10) * 0.4 + cheap (1 - 0.35) * 0.2
    (_inputs("a"), 0.2 + 0.32 + 0.13),
    (_inputs("deep-calm-free", rate=0.0, interruption=0.0, forward=1.0), 1.0),
    (_inputs("shallow-stormy-full-price", rate=0.40, interruption=25.0, forward=0.0), 0.0),
    (_inputs("no-quota", quota=0.0), 0.0),
    (_inputs("half-quota", quota=0.5), (0.2 + 0.32 + 0.13) / 2),
    (_inputs("forward-over-one", forward=3.0, interruption=0.0, rate=0.40), 0.8),
])
def test_a_score_follows_depth_calm_and_price_and_is_scaled_by_quota(inputs: PoolInputs, expected: float) -> None:
    assert score(inputs) == pytest.approx(expected, abs=1e-6)
    assert 0.0 <= score(inputs) <= 1.0


def test_depth_and_calm_outweigh_a_cheaper_rate() -> None:
    cheap_stormy = _inputs("cheap", rate=0.04, interruption=8.0, forward=0.2)
    dear_calm = _inputs("calm", rate=0.20, interruption=0.5, forward=0.8)
    ranked = rank_pools([cheap_stormy, dear_calm])
    assert [r.pool for r in ranked] == ["calm", "cheap"]
    assert [r.rank for r in ranked] == [1, 2]


def test_ties_are_broken_by_pool_id_so_the_ranking_is_deterministic() -> None:
    ranked = rank_pools([_inputs("b"), _inputs("a"), _inputs("c")])
    assert [r.pool for r in ranked] == ["a", "b", "c"]


def test_interruption_rate_is_reclaims_per_hundred_instance_hours_over_the_window() -> None:
    stats = interruption_stats({"p": 12, "q": 0}, {"p": 600.0, "q": 100.0, "r": 0.0}, window_h=720.0)
    assert stats["p"] == (2.0, 60.0)
    assert stats["q"] == (0.0, None)
    assert stats["r"] == (0.0, None)


def test_the_depth_input_is_the_forecast_free_share_when_the_calendar_shows_less_room_than_now() -> None:
    from orchestration.rankings import forward_share

    assert forward_share(10, 20) == 0.5  # no calendar: the free share now
    assert forward_share(10, 20, forward_free=2) == 0.1  # tenants booked within the horizon
    assert forward_share(10, 20, forward_free=15) == 0.5  # more room ahead does not count before it is there
    assert forward_share(10, 0, forward_free=5) == 0.0


def test_the_inputs_stored_beside_a_score_are_every_field_by_name_as_dataclasses_gives_them() -> None:
    p = PoolInputs(pool="p1", rate_eur_h=1.5, guaranteed_rate_eur_h=3.0, interruption_rate_pct_h=0.4,
                   mean_time_between_h=None, forward_share=0.25, quota_headroom=0.5, reclaims=3, instance_hours=7.5)
    assert list(p.as_dict().items()) == list(asdict(p).items())
