"""The great-expectations suites on the marts finance reads, on frames: each expectation can fail, and its message
names the row and the fix."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from orchestration.mart_expectations import MARTS, mart_suite

# great_expectations' import and context cost each worker seconds: the full suite runs these
pytestmark = pytest.mark.slow

pd = pytest.importorskip("pandas")


def _ledger(**change: Any) -> Any:
    row = {"hour": "2026-09-01 00:00:00", "workload": "w1", "counterfactual_eur": Decimal("4"),
           "reclaimable_eur": Decimal("1.4"), "floor_eur": Decimal("0"), "fallback_eur": Decimal("0.4"),
           "headroom_eur": Decimal("0.14"), "storage_eur": Decimal("0.05"), "orchestrator_eur": Decimal("0.01"),
           "costs_eur": Decimal("2.0"), "net_saving_eur": Decimal("2.0")}
    return pd.DataFrame([{**row, **change}])


def _verdicts(frame: Any, mart: str = "fct_savings_ledger", expected: int | None = None) -> dict[str, Any]:
    return {e.name: e for e in mart_suite(MARTS[mart], frame, expected)}


def test_a_balanced_ledger_row_passes_every_expectation() -> None:
    verdicts = _verdicts(_ledger(), expected=1)
    assert all(v.passed for v in verdicts.values()), verdicts


@pytest.mark.parametrize(("change", "failing", "named"), [
    ({"net_saving_eur": Decimal("2.5")}, "ledger_identity", "w1@"),
    ({"costs_eur": Decimal("2.5"), "net_saving_eur": Decimal("1.5")}, "ledger_identity", "lines_gap"),
    ({"workload": None}, "not_null", "workload"),
    ({"storage_eur": None}, "not_null", "storage_eur"),
])
def test_a_broken_ledger_row_fails_the_expectation_that_covers_it(change: dict[str, Any], failing: str,
                                                                  named: str) -> None:
    verdicts = _verdicts(_ledger(**change))
    assert not verdicts[failing].passed
    assert named in verdicts[failing].message


def test_a_mart_with_fewer_rows_than_its_upstream_implies_fails_the_row_count() -> None:
    verdicts = _verdicts(_ledger(), expected=3)
    assert not verdicts["row_count"].passed and "3 expected" in verdicts["row_count"].message


def test_the_export_checks_the_identity_on_its_totals() -> None:
    export = pd.DataFrame([{"month": "2026-09-01", "workload": "w1", "business_unit": "bu",
                            "counterfactual_eur": Decimal("4"), "costs_eur": Decimal("2"),
                            "net_saving_eur": Decimal("2.1")}])
    verdicts = _verdicts(export, "fct_finance_export", expected=1)
    assert verdicts["row_count"].passed and verdicts["not_null"].passed
    assert not verdicts["ledger_identity"].passed and "w1@2026-09-01" in verdicts["ledger_identity"].message
