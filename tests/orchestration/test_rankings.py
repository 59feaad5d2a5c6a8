"""The five-minute ranking and the exclusion cause (issue 19): a pool excluded because launches were refused has no
depth until a rate card taken after the refusals shows its room; what the ranking flags carries the cause. A
stand-in for ClickHouse answers the two reads ``gather_inputs`` makes; no service is started."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from orchestration.rankings import ExcludedPool, full_since, gather_inputs, ranking_rows
from orchestration.scoring import rank_pools

NOW = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
REFUSED = NOW - timedelta(minutes=2)      # the third refused launch: the pool is excluded as full


class _Ch:
    """The catalogue (two reclaimable pools) and the newest rate card of each: ``card_at`` naive, as ClickHouse
    returns a DateTime64 read without a zone."""

    def __init__(self, card_at: datetime) -> None:
        self.card_at = card_at.replace(tzinfo=None)

    def rows(self, sql: str, parameters: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        if "FROM provider_pools" in sql:
            return [(p, "r1", "h1", "a1", "reclaimable", 4, "0.10", "0.40", "") for p in ("deep", "other")]
        if "FROM rate_cards" in sql:   # pool, rate, guaranteed rate, free, capacity, sum(instances), card time
            return [("deep", 0.10, 0.40, 80, 100, 12, self.card_at), ("other", 0.10, 0.40, 80, 100, 12, self.card_at)]
        return []   # no reclaims

    def command(self, sql: str, parameters: dict[str, Any] | None = None) -> None: ...

    def insert(self, table: str, rows: Sequence[Sequence[Any]], columns: Sequence[str]) -> int:
        return len(rows)


@pytest.mark.parametrize(("card_at", "full", "share"), [
    pytest.param(REFUSED - timedelta(minutes=3), {}, 0.8, id="a pool not excluded: the card's free share"),
    pytest.param(REFUSED - timedelta(minutes=3), {"deep": REFUSED}, 0.0,
                 id="full, on a card older than the refusals: no depth"),
    pytest.param(REFUSED + timedelta(minutes=1), {"deep": REFUSED}, 0.8,
                 id="full, and a card after the refusals shows room: its share again"),
])
def test_the_live_scorer_gives_a_full_pool_no_depth_until_its_room_is_seen_again(
        card_at: datetime, full: dict[str, datetime], share: float) -> None:
    inputs = {i.pool: i for i in gather_inputs(_Ch(card_at), "r1", NOW, full=full)}
    assert (inputs["deep"].forward_share, inputs["other"].forward_share) == (share, 0.8)


def test_only_exclusions_for_refused_launches_make_a_pool_full() -> None:
    excluded = {"a": ExcludedPool("full", REFUSED), "b": ExcludedPool("reclaim", REFUSED)}
    assert full_since(excluded) == {"a": REFUSED}


def test_the_ranking_flags_every_excluded_pool_and_carries_the_cause_with_its_inputs() -> None:
    ranked = rank_pools(gather_inputs(_Ch(NOW), "r1", NOW))
    rows = ranking_rows(NOW, "r1", ranked, {"deep": ExcludedPool("full", REFUSED)}, {"deep": "g1"})
    got = {r[3]: (r[9], json.loads(str(r[10]))) for r in rows}
    assert got["deep"][0] is True and got["deep"][1]["exclusion_cause"] == "full" and got["deep"][1]["group"] == "g1"
    assert got["other"][0] is False and got["other"][1]["exclusion_cause"] == ""
