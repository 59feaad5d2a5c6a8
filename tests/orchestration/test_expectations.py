from __future__ import annotations

from decimal import Decimal

import pandas as pd
import pytest

from orchestration.expectations import ledger_balances, no_negative_hours, rankings_cover_pools, scores_in_range
from orchestration.ledger_inputs import LEDGER_COLUMNS

# great_expectations' import and context cost each worker seconds: the full suite runs these
pytestmark = pytest.mark.slow


def _ledger(**override: object) -> pd.DataFrame:
    row: dict[str, object] = dict.fromkeys(LEDGER_COLUMNS, Decimal(0))
    row.update(hour="2026-09-01 05:00", workload="etl", label="rate-card saving", counterfactual_eur=Decimal("10"),
               reclaimable_eur=Decimal("3"), storage_eur=Decimal("1"), costs_eur=Decimal("4"),
               net_saving_eur=Decimal("6"), wasted_hours=Decimal("0.5"))
    row.update(override)
    return pd.DataFrame([row])


def test_a_balanced_ledger_passes_and_an_unbalanced_row_is_named() -> None:
    assert ledger_balances(_ledger())[0]
    ok, message = ledger_balances(_ledger(net_saving_eur=Decimal("6.5")))
    assert not ok
    assert "imbalance in 1 row(s): etl@2026-09-01 05:00: -0.500000" in message


def test_costs_that_do_not_add_up_to_their_lines_fail() -> None:
    ok, message = ledger_balances(_ledger(costs_eur=Decimal("5"), net_saving_eur=Decimal("5")))
    assert not ok and "lines_gap" in message


def test_negative_hours_are_named_by_column_workload_and_hour() -> None:
    frame = _ledger(wasted_hours=-2.0)
    frame["wasted_hours"] = frame["wasted_hours"].astype(float)
    ok, message = no_negative_hours(frame, ["wasted_hours"], "savings_ledger")
    assert not ok and "wasted_hours < 0 in 1 row(s) (etl@2026-09-01 05:00=-2.0)" in message


def test_scores_out_of_range_and_missing_pools_fail_with_the_values() -> None:
    assert scores_in_range([0.0, 0.5, 1.0])[0]
    ok, message = scores_in_range([0.5, 1.5])
    assert not ok and "1.5" in message
    ok, message = rankings_cover_pools(["a", "b"], ["a", "b", "c"])
    assert not ok and "misses 1 active pool(s): c" in message
