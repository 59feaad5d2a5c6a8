"""The fleet-scale simulation's scenario: the region, the workloads, and when their claims arrive.

Three phases, in virtual time: **the build** (every workload's whole claim arrives once in [30 s, ``fill_s``];
it lasts until every build claim is placed — as long as the token budget needs — or none was for ``stall_s``, at
most ``build_max_s``; a build unit still waiting then stays first in its workload's queue, so a steady claim of
that workload is charged the wait),
**steady arrivals** (claims of ``steady_claim`` units by random workloads, the fleet's units growing by
``growth_per_h`` an hour, for ``steady_s`` from the end of the build: the placement p99 is measured on these),
then **the hall reclaim**. ``steady_arithmetic`` states the rate and what it asks of the budget.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from contracts.schema import Contract

from ..simregion.config import RegionConfig

__all__ = ["FleetPlan", "fleet_region", "fleet_workloads", "steady_arithmetic", "steady_arrivals"]


@dataclass(frozen=True)
class FleetPlan:
    instances: int = 20_000          # reclaimable instances of ours the claims are sized for
    partitions: int = 10
    per_workload: int = 20           # instances per workload: workloads = instances / per_workload ...
    units_per_instance: float = 1.3  # ... claiming this many 4-vCPU units an instance (the planner's pool mix:
                                     # 4,800 units in 3,693 reclaimable instances at the build's end at 2,000)
    pass_interval_s: float = 5.0     # the live controller's default
    fill_s: float = 300.0            # the build: each workload's claim arrives once in [30 s, fill_s] ...
    build_max_s: float = 3600.0      # ... and the build lasts until every build claim is placed (or none was
                                     # for ``stall_s``), at most this
    growth_per_h: float = 0.10       # steady arrivals: the fleet's units grow by this share an hour ...
    steady_claim: int = 10           # ... in claims of this many units (~4 instances) by random workloads ...
    steady_s: float = 900.0          # ... for this long after the build; then the hall reclaim
    after_s: float = 900.0           # simulated after the reclaim at most (the floor's promise is 15 min) ...
    settle_s: float = 60.0           # ... and at least, then until every floor and replacement is back (or
    stall_s: float = 180.0           # ... nothing waiting was served for this long: counted as never served)
    hall: str = "h1"
    seed: int = 18
    budget_rate: float = 10.0        # ADR-12: mutating calls a second per region, split statically
    floor_share: float = 0.2         # share of workloads on T2 (a 10 % floor); the rest T3 (no floor)
    region_per_instance: float = 1 / 2800   # slot_scale per instance of ours: room for the fleet in two halls

    @property
    def workloads(self) -> int:
        """How many workloads the fleet has (at least one per partition)."""
        return max(self.partitions, round(self.instances / self.per_workload))

    @property
    def claim_units(self) -> int:
        """Units of one workload's build claim (4-vCPU units: ``per_workload`` × ``units_per_instance``)."""
        return round(self.per_workload * self.units_per_instance)


def fleet_region(plan: FleetPlan) -> RegionConfig:
    """The simulated region sized for the plan's fleet."""
    return RegionConfig(seed=plan.seed, slot_scale=max(1.0, plan.instances * plan.region_per_instance),
                        occupancy=0.35, room_first=True, hall_reclaims_per_30d=0.0, quota_instances=10**7,
                        quota_vcpu=10**9)


def fleet_workloads(plan: FleetPlan, region: str) -> tuple[dict[str, Contract], list[tuple[float, str, int]]]:
    """The contracts by ref and the build's claims (virtual seconds after the start, ref, units), spread over
    the partitions."""
    from contracts.schema import ContractSpec
    from contracts.tiers import resolve

    rng = random.Random(plan.seed)
    contracts: dict[str, Contract] = {}
    arrivals = []
    for k in range(plan.workloads):
        tier = "T2" if rng.random() < plan.floor_share else "T3"
        doc: dict[str, Any] = {
            "apiVersion": "sco/v1", "workload": f"w{k:05d}", "version": 1, "owner": "owner@example.org",
            "business_unit": ("analytics", "research", "engineering", "commerce", "platform")[k % 5],
            "scheduler": "slurm", "partition": f"{region}/c{k % plan.partitions:02d}", "tier": tier,
            "resources": {"vcpu": 4, "memory_gib": 16}}
        if tier == "T2":
            doc["fallback"] = {"spend_cap_24h_eur": 100, "approver": "budget@example.org"}
        c, findings = resolve(ContractSpec.model_validate(doc))
        if c is None:
            raise ValueError(f"fleet contract {doc['workload']} does not resolve: {findings}")
        contracts[c.ref] = c
        arrivals.append((rng.uniform(30.0, plan.fill_s), c.ref, plan.claim_units))
    return contracts, sorted(arrivals)


def steady_count(plan: FleetPlan) -> int:
    """Claims of ``steady_claim`` units in ``steady_s``: the fleet's units × growth an hour × the hours."""
    units = plan.workloads * plan.claim_units * plan.growth_per_h * plan.steady_s / 3600
    return round(units / plan.steady_claim)


def steady_arrivals(plan: FleetPlan, refs: list[str]) -> list[tuple[float, str, int]]:
    """The steady claims: (seconds after the steady phase starts, ref, units), uniform in [0, steady_s), each
    by a random workload."""
    rng = random.Random(plan.seed + 1)
    return sorted((rng.uniform(0.0, plan.steady_s), rng.choice(refs), plan.steady_claim)
                  for _ in range(steady_count(plan)))


def steady_arithmetic(plan: FleetPlan) -> str:
    """The steady rate, stated: claims a second and the launch calls they can ask of the budget."""
    units = plan.workloads * plan.claim_units
    claims_s = steady_count(plan) / plan.steady_s
    share = plan.budget_rate / plan.partitions
    return (f"steady arrivals: the fleet's {units:,} units grow by {plan.growth_per_h:.0%} an hour = "
            f"{units * plan.growth_per_h / 3600:.2f} units/s = {claims_s:.3f} claims/s of {plan.steady_claim} "
            f"units ({steady_count(plan)} claims in {plan.steady_s:.0f} s, {claims_s / plan.partitions:.4f}/s a "
            f"partition); one launch call per (workload, pool) slot a claim touches, so at k pools a claim they "
            f"ask {claims_s:.3f} × k calls/s of the region's {plan.budget_rate:.0f} ({share:.1f}/s a partition, "
            f"burst {share * plan.pass_interval_s:.0f}: a claim of up to {share * plan.pass_interval_s:.0f} "
            f"slots fits one pass)")
