"""The composite pool score has one home (contracts.scoring); the ranking and the planner use it unchanged."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from contracts.scoring import WEIGHTS, composite_score, full_pool_share, price_ratio, without_depth
from controllers import planning
from orchestration.scoring import PoolInputs, score

# forward share, interruption %/h, price ratio, quota headroom -> score; expected values were taken from
# orchestration/scoring.py:score and controllers/planning/scores.py:composite_score before they shared the formula
TABLE = [
    (0.5, 1.0, 0.3, 1.0, 0.7),
    (0.0, 0.0, 0.0, 1.0, 0.6),
    (1.0, 10.0, 1.0, 1.0, 0.4),
    (1.2, -1.0, -0.5, 1.0, 1.0),
    (0.123456, 3.3333, 0.777, 1.0, 0.36065),
    (0.25, 5.0, 1.4, 1.3, 0.3),
    (0.37, 2.5, 0.42, 0.8, 0.4512),
    (0.9, 12.0, 0.25, 0.5, 0.255),
    (0.6, 0.7, 0.35, 0.0, 0.0),
]


def test_depth_and_calm_outweigh_price() -> None:
    assert dict(WEIGHTS) == {"depth": 0.4, "calm": 0.4, "cheap": 0.2}
    with pytest.raises(TypeError):
        WEIGHTS["cheap"] = 0.9  # type: ignore[index]


@pytest.mark.parametrize(("share", "rate", "ratio", "headroom", "expected"), TABLE)
def test_the_composite_score_matches_the_table(share: float, rate: float, ratio: float, headroom: float,
                                               expected: float) -> None:
    assert composite_score(share, rate, ratio, quota_headroom=headroom) == expected


@pytest.mark.parametrize(("share", "rate", "ratio", "headroom", "expected"), TABLE)
def test_the_ranking_scores_a_pool_with_the_shared_formula(share: float, rate: float, ratio: float,
                                                           headroom: float, expected: float) -> None:
    inputs = PoolInputs("p", rate_eur_h=ratio * 2.0, guaranteed_rate_eur_h=2.0, interruption_rate_pct_h=rate,
                        mean_time_between_h=None, forward_share=share, quota_headroom=headroom)
    assert score(inputs) == expected


@pytest.mark.parametrize(("share", "rate", "ratio", "headroom", "expected"),
                         [row for row in TABLE if row[3] == 1.0])
def test_the_planner_falls_back_on_the_same_formula(share: float, rate: float, ratio: float, headroom: float,
                                                    expected: float) -> None:
    assert planning.composite_score(share, rate, ratio) == expected


def test_an_unknown_guaranteed_rate_earns_nothing_for_price() -> None:
    assert price_ratio(1.0, 0.0) == 1.0
    assert score(PoolInputs("p", 1.0, 0.0, 1.0, None, 0.5)) == 0.56


def test_the_planner_may_name_its_own_worst_interruption_rate() -> None:
    assert planning.composite_score(0.5, 4.0, 0.3, worst_interruption_pct_h=5.0) == 0.42


_AT = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)   # the third refused launch: the pool is excluded as full


@pytest.mark.parametrize(("full_since", "card_at", "free_now", "share"), [
    pytest.param(None, _AT - timedelta(minutes=4), 30, 0.6, id="a pool that is not full keeps its share"),
    pytest.param(_AT, _AT - timedelta(minutes=4), 30, 0.0,
                 id="a card from before the refusals still counts the room the tenants took: no depth"),
    pytest.param(_AT, _AT, 30, 0.0, id="a card taken in the instant of the exclusion is not after it: no depth"),
    pytest.param(_AT, None, 30, 0.0, id="no card time: no depth"),
    pytest.param(_AT, _AT + timedelta(minutes=1), 0, 0.0, id="a card after the refusals that shows no room: none"),
    pytest.param(_AT, _AT + timedelta(minutes=1), 1, 0.6, id="room seen again on a card after the refusals"),
])
def test_a_full_pool_has_no_depth_until_a_card_after_the_refusals_shows_room(
        full_since: datetime | None, card_at: datetime | None, free_now: int, share: float) -> None:
    assert full_pool_share(0.6, full_since=full_since, card_at=card_at, free_now=free_now) == share


@pytest.mark.parametrize(("share", "headroom"), [(0.5, 1.0), (0.0, 1.0), (1.3, 1.0), (0.5, 0.5), (0.9, 0.0)])
def test_a_score_without_its_depth_is_the_score_of_the_same_pool_at_zero_depth(share: float, headroom: float) -> None:
    full = composite_score(share, 2.5, 0.42, quota_headroom=headroom)
    assert without_depth(full, share, headroom) == pytest.approx(
        composite_score(0.0, 2.5, 0.42, quota_headroom=headroom), abs=2e-6)
