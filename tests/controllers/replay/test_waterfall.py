"""The waterfall from the ceiling the floors allow to the achieved net adds up, item by item (issue 36)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from controllers.replay.engine import WorkloadOutcome
from controllers.replay.waterfall import ITEMS, NOT_MODELLED, waterfall

S = Decimal("0.35")
G = Decimal("0.10")   # guaranteed EUR per unit-hour
H = 3600


def outcome(**kw: object) -> WorkloadOutcome:
    base: dict[str, object] = {"workload": "w", "tier": "T3", "units": 10, "guaranteed_rate_per_unit": G}
    return WorkloadOutcome(**{**base, **kw})  # type: ignore[arg-type]


def test_a_whole_claim_on_reclaimable_capacity_at_the_planning_share_is_at_the_ceiling() -> None:
    o = outcome(wanted_s=10 * H, delivered_s=10 * H, reclaimable_s=10 * H, reclaimable_cost=S * G * 10,
                reclaimable_cost_planning=S * G * 10)
    w = waterfall({"w": o}, {"w": 0}, S)
    assert w["ceiling"] == pytest.approx(65.0) and w["net"] == pytest.approx(65.0)
    assert all(w[k] == pytest.approx(0.0) for k in (*ITEMS, *NOT_MODELLED))


@pytest.mark.parametrize(("kw", "item", "points"), [
    # 1 of 10 unit-hours redone: its guaranteed value is lost from the useful work
    ({"wasted_s": 1 * H}, "wasted work", 10.0),
    # 2 unit-hours never delivered: the saving they would have made (65 % of their value)
    ({"delivered_s": 8 * H, "reclaimable_s": 8 * H, "shortfall_s": 2 * H,
      "reclaimable_cost_planning": S * G * 8, "reclaimable_cost": S * G * 8}, "shortfall", 13.0),
    # 2 unit-hours on fallback at the guaranteed rate: 65 % of their value beyond the planning share
    ({"reclaimable_s": 8 * H, "fallback_s": 2 * H, "fallback_cost": G * 2,
      "reclaimable_cost_planning": S * G * 8, "reclaimable_cost": S * G * 8}, "fallback spend", 13.0),
    # 1 EUR of the reclaimable spend held beyond the claim (make-before-break overlap)
    ({"reclaimable_cost_planning": S * G * 10 + Decimal("0.05"), "reclaimable_cost": S * G * 10 + Decimal("0.05"),
      "surplus_cost_planning": Decimal("0.05")}, "surplus and make-before-break overlap", 5.0),
    # an instance that holds the units with room to spare: paid beyond the work, not surplus, not premium
    ({"reclaimable_cost_planning": S * G * 10 + Decimal("0.03"), "reclaimable_cost": S * G * 10 + Decimal("0.03")},
     "fit and pool rates", 3.0),
])
def test_each_loss_lands_on_its_own_bar_and_the_bars_add_up_to_the_net(kw: dict[str, object], item: str,
                                                                       points: float) -> None:
    base: dict[str, object] = {"wanted_s": 10 * H, "delivered_s": 10 * H, "reclaimable_s": 10 * H,
                               "reclaimable_cost": S * G * 10, "reclaimable_cost_planning": S * G * 10}
    w = waterfall({"w": outcome(**{**base, **kw})}, {"w": 0}, S)
    assert w[item] == pytest.approx(points)
    assert sum(w[k] for k in ITEMS if k != item) == pytest.approx(0.0, abs=1e-9)
    assert w["ceiling"] - sum(w[k] for k in (*ITEMS, *NOT_MODELLED)) == pytest.approx(w["net"])


def test_a_floor_bought_at_its_share_costs_nothing_beyond_the_ceiling_and_one_bought_twice_does() -> None:
    at_share = outcome(wanted_s=10 * H, delivered_s=10 * H, reclaimable_s=7 * H, floor_cost=G * 3,
                       reclaimable_cost=S * G * 7, reclaimable_cost_planning=S * G * 7)
    w = waterfall({"w": at_share}, {"w": 30}, S)
    assert w["ceiling"] == pytest.approx(65.0 * 0.7) and w["floor"] == pytest.approx(0.0)
    assert w["net"] == pytest.approx(w["ceiling"])
    doubled = outcome(**{**at_share.__dict__, "floor_cost": G * 6})
    w = waterfall({"w": doubled}, {"w": 30}, S)
    assert w["floor"] == pytest.approx(30.0) and w["ceiling"] - sum(w[k] for k in ITEMS) == pytest.approx(w["net"])
