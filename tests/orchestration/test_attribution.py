from __future__ import annotations

from decimal import Decimal

import pytest

from orchestration.attribution import LABEL, Loss, Usage, attribute, cents, orchestrator_shares
from orchestration.planning_example import INPUTS, planning_month

from . import worked_example as ex

D = Decimal


def _worked_example_usage() -> tuple[list[Usage], list[Loss]]:
    usage = [
        Usage("etl", ex.RC, "reclaimable", "work", D(240), D("0.14"), D("0.40")),
        Usage("etl", ex.CM, "committed", "floor", D(48), D("0.40"), D("0.40")),
        Usage("etl", ex.GD, "guaranteed", "fallback", D(5), D("0.40"), D("0.40")),
        Usage("etl", ex.RC, "reclaimable", "headroom", D(24), D("0.14"), D("0.40")),
    ]
    losses = [Loss("etl", ex.RC, D("0.5"), D("0.40")) for _ in range(3)]
    losses.append(Loss("etl", ex.RC, D(1), D("0.40"), "defect"))
    losses.append(Loss("etl", ex.RC, D("0.5"), D("0.40"), "false-positive"))
    return usage, losses


def test_the_worked_example_reproduces_the_ledger_to_the_cent() -> None:
    usage, losses = _worked_example_usage()
    line = attribute("etl", "2026-09-01", usage, losses, storage_eur=D(500) * 24 * D("0.00005"),
                     orchestrator_eur=D("0.05") * 24)
    for field, expected in ex.EXPECTED.items():
        assert cents(getattr(line, field)) == expected, field
    assert line.net_saving_eur == D("56.440000")
    assert line.useful_hours == D("291.0")  # 293 h of work minus 2 h wasted (0.5 h of it a false positive)
    assert line.false_positive_hours == D("0.5")
    assert line.reclaimable_hours == 240 and line.fallback_hours == 5
    assert line.label == LABEL == "rate-card saving"


def test_wasted_work_is_removed_from_useful_work_once_and_not_added_as_a_cost() -> None:
    usage, _ = _worked_example_usage()
    clean = attribute("etl", "d", usage)
    lossy = attribute("etl", "d", usage, [Loss("etl", ex.RC, D(2), D("0.40"))])
    assert clean.costs_eur == lossy.costs_eur
    assert clean.net_saving_eur - lossy.net_saving_eur == D("0.80")


def test_a_workload_defect_is_reported_to_the_workload_but_not_charged_to_reclaim() -> None:
    usage, _ = _worked_example_usage()
    clean = attribute("etl", "d", usage)
    defect = attribute("etl", "d", usage, [Loss("etl", ex.RC, D(2), D("0.40"), "defect")])
    assert defect.net_saving_eur == clean.net_saving_eur
    assert defect.defect_wasted_eur == D("0.80") and defect.defect_wasted_hours == 2


def test_headroom_is_a_cost_but_not_useful_work() -> None:
    line = attribute("w", "d", [Usage("w", "p", "reclaimable", "headroom", D(10), D("0.1"), D("0.4"))])
    assert line.counterfactual_eur == 0 and line.headroom_eur == D("1") and line.net_saving_eur == D("-1")


def test_other_workloads_usage_is_ignored() -> None:
    line = attribute("a", "d", [Usage("b", "p", "reclaimable", "work", D(10), D("0.1"), D("0.4"))])
    assert line.instance_hours == 0 and line.net_saving_eur == 0


def test_negative_usage_hours_are_refused_with_the_value() -> None:
    with pytest.raises(ValueError, match="-1"):
        Usage("w", "p", "reclaimable", "work", D(-1), D("0.1"), D("0.4"))


def test_orchestrator_shares_are_pro_rata_and_add_up_exactly() -> None:
    shares = orchestrator_shares(D("1.00"), {"a": D(1), "b": D(1), "c": D(1)})
    assert sum(shares.values()) == D("1.00")
    assert sorted(shares.values()) == [D("0.333333"), D("0.333333"), D("0.333334")]
    assert orchestrator_shares(D(5), {"a": D(0)}) == {"a": D(0)}


def test_the_planning_month_is_its_counterfactual_less_its_costs_and_moves_the_way_each_input_pushes_it() -> None:
    # ADR-26's example is arithmetic on documented inputs chosen to give the plan's figures: asserting those figures
    # back would test the inputs, not the ledger (issue 36). What the ledger must do with any inputs is checked.
    line = planning_month()
    assert cents(line.counterfactual_eur - line.costs_eur) == cents(line.net_saving_eur)
    assert line.costs_eur == (line.reclaimable_eur + line.floor_eur + line.fallback_eur + line.headroom_eur
                              + line.storage_eur + line.orchestrator_eur)
    for change, direction in (({"wasted_share_of_reclaimable": D("0.03")}, -1),   # more work redone
                              ({"reclaimable_rate": INPUTS["reclaimable_rate"] * 2}, -1),
                              # fallback hours at the guaranteed rate: as much cost as the work is worth
                              ({"fallback_share": D("0.06")}, 0),
                              ({"orchestrator_eur": INPUTS["orchestrator_eur"] / 2}, 1)):
        moved = planning_month(change).net_saving_eur - line.net_saving_eur
        assert (moved > 0) if direction > 0 else (moved < 0) if direction < 0 else (abs(moved) < D("0.01")), change
    # wasted work leaves the useful work once, at the guaranteed rate, and is no cost
    more = planning_month({"wasted_share_of_reclaimable": D("0.03")})
    assert more.costs_eur == line.costs_eur and more.counterfactual_eur < line.counterfactual_eur
