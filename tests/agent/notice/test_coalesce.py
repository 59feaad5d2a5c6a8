"""The pure decision for a plausible notice (agent/notice/coalesce.py): drain once, count copies, record a bound."""

from __future__ import annotations

import pytest

from agent.notice.check import MAX_RECORDED_NOTICES
from agent.notice.coalesce import Coalesced, NoticeState, Verdict, coalesce


def state(seen: bool = False, draining: bool = False, advisory_running: bool = False,
          advisory_workloads: bool = False, recorded: int = 0) -> NoticeState:
    return NoticeState(seen, draining, advisory_running, advisory_workloads, recorded)


@pytest.mark.parametrize(("kind", "known", "expected"), [
    # the first hard notice drains
    ("notice", state(), Coalesced(Verdict.DRAIN)),
    ("notice", state(advisory_running=True), Coalesced(Verdict.DRAIN)),  # a reclaim overtakes an advisory drain
    # a copy of any notice already seen is only counted, whatever else holds
    ("notice", state(seen=True), Coalesced(Verdict.DUPLICATE)),
    ("notice", state(seen=True, draining=True, recorded=99), Coalesced(Verdict.DUPLICATE)),
    ("advisory", state(seen=True, advisory_workloads=True), Coalesced(Verdict.DUPLICATE)),
    # a distinct hard notice while draining: one event while under the bound, then a counter
    ("notice", state(draining=True), Coalesced(Verdict.RECORD, "already-draining")),
    ("notice", state(draining=True, recorded=MAX_RECORDED_NOTICES - 1), Coalesced(Verdict.RECORD, "already-draining")),
    ("notice", state(draining=True, recorded=MAX_RECORDED_NOTICES), Coalesced(Verdict.COALESCE, "already-draining")),
    ("notice", state(draining=True, recorded=10_000), Coalesced(Verdict.COALESCE, "already-draining")),
    # advisories: drain only opted-in workloads, and only when nothing is draining yet
    ("advisory", state(advisory_workloads=True), Coalesced(Verdict.DRAIN)),
    ("advisory", state(), Coalesced(Verdict.RECORD, "recorded")),
    ("advisory", state(recorded=MAX_RECORDED_NOTICES), Coalesced(Verdict.COALESCE, "recorded")),
    ("advisory", state(draining=True, advisory_workloads=True), Coalesced(Verdict.RECORD, "already-draining")),
    ("advisory", state(advisory_running=True, advisory_workloads=True), Coalesced(Verdict.RECORD, "already-draining")),
    ("advisory", state(advisory_running=True, advisory_workloads=True, recorded=MAX_RECORDED_NOTICES),
     Coalesced(Verdict.COALESCE, "already-draining")),
])
def test_a_notice_drains_once_copies_are_counted_and_distinct_ones_get_an_event_up_to_the_bound(
        kind: str, known: NoticeState, expected: Coalesced) -> None:
    assert coalesce(kind, known) == expected


def test_a_flood_of_ten_thousand_distinct_and_repeated_ids_gives_one_drain_and_at_most_the_bound_of_events() -> None:
    seen: set[str] = set()
    draining, recorded = False, 0
    verdicts: dict[Verdict, int] = dict.fromkeys(Verdict, 0)
    for i in range(10_000):
        notice_id = f"n-{i % 2_500}"  # 2,500 distinct ids, each four times
        decision = coalesce("notice", state(notice_id in seen, draining, recorded=recorded), bound=16)
        seen.add(notice_id)
        verdicts[decision.verdict] += 1
        draining = draining or decision.verdict is Verdict.DRAIN
        recorded += decision.verdict is Verdict.RECORD
    assert verdicts == {Verdict.DRAIN: 1, Verdict.RECORD: 16, Verdict.COALESCE: 2_500 - 17, Verdict.DUPLICATE: 7_500}
