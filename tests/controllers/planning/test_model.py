"""The planner's hot-path constructors build the very values the frozen dataclasses do (issue 18)."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

from controllers.planning.model import Allocation, Purpose, Strategy, WorkloadPlan, allocation, workload_plan


def test_allocation_builds_a_value_equal_to_the_dataclass_constructor_with_every_field_set() -> None:
    fast = allocation("p1", Purpose.FLOOR, 5, 2, Decimal("0.12"))
    slow = Allocation("p1", Purpose.FLOOR, 5, 2, Decimal("0.12"))
    assert fast == slow and hash(fast) == hash(slow) and type(fast) is Allocation
    assert all(hasattr(fast, f.name) for f in dataclasses.fields(Allocation))  # an unset slot has no value
    assert fast != allocation("p1", Purpose.FLOOR, 5, 3, Decimal("0.12"))


def test_a_hot_path_allocation_stays_frozen() -> None:
    fast = allocation("p1", Purpose.RECLAIMABLE, 5, 2, Decimal("0.12"))
    try:
        fast.units = 6  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        return
    raise AssertionError("a hot-path allocation could be changed")


def test_workload_plan_builds_a_value_equal_to_the_dataclass_constructor_with_every_field_set() -> None:
    a = (allocation("p1", Purpose.RECLAIMABLE, 5, 2, Decimal("0.12")),)
    fast = workload_plan("wk", "wk@1:5", Strategy.DEPTH_FIRST, a, 5, 0, 0, Decimal("0.24"), ("note",))
    slow = WorkloadPlan(workload="wk", claim_digest="wk@1:5", strategy=Strategy.DEPTH_FIRST, allocations=a,
                        wanted_units=5, floor_units=0, shortfall_units=0, cheapest_cost_eur_h=Decimal("0.24"),
                        notes=("note",))
    assert fast == slow and hash(fast) == hash(slow) and fast.depth_premium_eur_h == Decimal(0)
    assert all(hasattr(fast, f.name) for f in dataclasses.fields(WorkloadPlan))
    assert fast != dataclasses.replace(slow, shortfall_units=1)


def test_allocations_and_plans_carry_no_instance_dict_for_the_collector_to_walk() -> None:
    a = allocation("p1", Purpose.RECLAIMABLE, 5, 2, Decimal("0.12"))
    p = workload_plan("wk", "wk@1:5", Strategy.DEPTH_FIRST, (a,), 5, 0, 0, Decimal("0.24"), ())
    assert not hasattr(a, "__dict__") and not hasattr(p, "__dict__")
