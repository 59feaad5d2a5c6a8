"""The showback page judges the workload against its own contract (issue 36): PASS or FAIL with the cause."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from reports.data import LINES, ShowbackData
from reports.pages import showback_page


def month_row(instance_hours: float, wasted_hours: float) -> dict[str, Any]:
    numbers = ("counterfactual_eur", "gross_saving_eur", *LINES, "costs_eur", "net_saving_eur",
               "defect_wasted_eur", "depth_premium_eur", "false_positive_hours", "false_positive_eur", "net_pct")
    return {**dict.fromkeys(numbers, 0), "instance_hours": instance_hours, "wasted_hours": wasted_hours,
            "label": "rate-card saving"}


def page(interruptions: int, hours: float, declared: float, wasted_hours: float) -> str:
    breach = {"measured": 100 * interruptions / hours, "declared": declared, "interruptions": interruptions,
              "hours": hours, "breach": 100 * interruptions / hours > declared}
    return showback_page(ShowbackData("etl", date(2026, 11, 1), month_row(hours, wasted_hours), [], {}, breach,
                                      None))


@pytest.mark.parametrize(("interruptions", "hours", "declared", "wasted", "verdict", "cause"), [
    (10, 1000.0, 5.0, 5.0, "PASS", None),                       # 1 %/h against 5; wasted 0.5 %
    (80, 1000.0, 5.0, 5.0, "FAIL", "80 reclaim(s) over 1,000.0 instance-hours where the tolerance allows 50.0"),
    (10, 1000.0, 5.0, 40.0, "FAIL", "wasted 4.00 % of its reclaimable hours, 1.3× the budget"),
    (1, 4.0, 5.0, 0.0, "FAIL", "a single reclaim on this little exposure is already 25.0 %/h"),
])
def test_the_showback_page_says_whether_the_workload_kept_its_own_tolerance_and_budget(
        interruptions: int, hours: float, declared: float, wasted: float, verdict: str, cause: str | None) -> None:
    html = page(interruptions, hours, declared, wasted)
    assert f"<b>{verdict}</b>" in html
    assert (cause is None and "Cause:" not in html) or (cause is not None and cause in html)


def test_without_a_measurement_the_page_gives_no_verdict() -> None:
    html = showback_page(ShowbackData("etl", date(2026, 11, 1), month_row(0.0, 0.0), [], {}, None, None))
    assert "Verdict: not yet" in html and "<b>PASS</b>" not in html
