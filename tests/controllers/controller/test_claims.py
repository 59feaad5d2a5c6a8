"""Claims normalised from the scheduler's items, and the memo a controller keeps of the last pass's."""

from __future__ import annotations

from dataclasses import replace

from controllers.controller.claims import WorkItem, WorkMemo, normalise, normalised
from tests.controllers.controller.test_decide import ETL, TRAIN, demand


def test_the_memo_answers_a_pass_with_the_same_items_and_normalises_again_when_they_change() -> None:
    contracts = {ETL.ref: ETL, TRAIN.ref: TRAIN}
    memo = WorkMemo()
    items = demand(ETL, 3) + demand(TRAIN, 2)
    first = normalised(list(items), contracts, memo)
    assert first == normalise(items, contracts)
    assert normalised(list(items), dict(contracts), memo) is first
    grown = (*items, WorkItem("slurm", "etl-9", ETL.ref, 4, 16, "pending"))
    assert normalised(grown, contracts, memo) == normalise(grown, contracts) != first
    changed = (replace(items[0], vcpu=64), *items[1:])
    assert normalised(changed, contracts, memo) == normalise(changed, contracts)
    assert normalised(items, {ETL.ref: ETL}, memo) == normalise(items, {ETL.ref: ETL})
