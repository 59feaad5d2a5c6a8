"""What counts as a reclaim: one predicate on the event kind (contracts.subjects.is_reclaim)."""

from __future__ import annotations

import pytest

from contracts.subjects import RECLAIM_KINDS, EventKind, is_reclaim
from orchestration.rankings import RECLAIM_FILTER


@pytest.mark.parametrize(("kind", "drill", "expected"), [
    (EventKind.NOTICE, False, True),
    (EventKind.NO_NOTICE_LOSS, False, True),
    ("notice", False, True),
    ("no-notice-loss", False, True),
    (EventKind.NOTICE, True, False),          # a drill never counts
    (EventKind.NO_NOTICE_LOSS, True, False),
    (EventKind.TERMINATED, False, False),     # the end of a reclaim already counted at its start
    (EventKind.ADVISORY, False, False),       # a forecast, not a reclaim
    (EventKind.LOST, False, False),
    (EventKind.LAUNCH_FAILED, False, False),
])
def test_a_reclaim_is_a_notice_or_a_loss_without_one_and_never_a_drill(kind: EventKind | str, drill: bool,
                                                                       expected: bool) -> None:
    assert is_reclaim(kind, drill) is expected


def test_the_ranking_sql_counts_exactly_the_reclaim_kinds_and_no_drill() -> None:
    assert RECLAIM_FILTER == "kind IN ('no-notice-loss', 'notice') AND NOT drill AND pool != ''"
    assert all(f"'{k}'" in RECLAIM_FILTER for k in RECLAIM_KINDS)
    assert "position(" not in RECLAIM_FILTER and "cause" not in RECLAIM_FILTER
