"""The fleet-scale simulation's scenario (issue 18): the build's claims, then steady arrivals at a stated rate."""

from __future__ import annotations

import pytest

from controllers.replay.fleet_scenario import (
    FleetPlan,
    fleet_workloads,
    steady_arithmetic,
    steady_arrivals,
    steady_count,
)


def test_the_build_claims_each_workload_once_sized_for_the_target_fleet() -> None:
    plan = FleetPlan(instances=2_000)
    contracts, build = fleet_workloads(plan, "r1")
    assert len(contracts) == len(build) == 100 == plan.workloads
    assert {ref for _, ref, _ in build} == set(contracts)
    assert all(30.0 <= t <= plan.fill_s and units == 26 for t, _, units in build)   # 20 instances × 1.3 units
    assert len({c.partition for c in contracts.values()}) == plan.partitions


@pytest.mark.parametrize(("instances", "claims"), [(20_000, 65), (2_000, 6)])
def test_steady_arrivals_grow_the_fleet_by_the_stated_share_an_hour(instances: int, claims: int) -> None:
    # 1,000 workloads × 26 units = 26,000 units; 10 % an hour for 900 s = 650 units = 65 claims of 10 units
    plan = FleetPlan(instances=instances)
    arrivals = steady_arrivals(plan, sorted(fleet_workloads(plan, "r1")[0]))
    assert steady_count(plan) == len(arrivals) == claims
    assert sum(u for _, _, u in arrivals) == pytest.approx(plan.workloads * plan.claim_units * 0.1 / 4, abs=10)
    assert all(0.0 <= t < plan.steady_s for t, _, _ in arrivals)
    assert [t for t, _, _ in arrivals] == sorted(t for t, _, _ in arrivals)
    assert arrivals == steady_arrivals(plan, sorted(fleet_workloads(plan, "r1")[0]))   # the seed's, every run


def test_the_printed_arithmetic_states_the_rate_and_what_fits_a_pass() -> None:
    text = steady_arithmetic(FleetPlan(instances=20_000))
    assert "26,000 units grow by 10% an hour = 0.72 units/s = 0.072 claims/s of 10 units" in text
    assert "65 claims in 900 s" in text and "1.0/s a partition, burst 5" in text
