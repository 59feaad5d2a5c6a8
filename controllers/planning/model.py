"""What the planner reads and writes. Frozen dataclasses: the planner is a pure function over them.

Capacity is counted in **units**: one unit is one of the workload's declared ``resources`` (its normalised
capacity). A pool instance holds ``units_per_instance`` units; caps are shares of a workload's units.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from functools import cached_property

from contracts.pools import Pool
from contracts.schema import Contract

__all__ = [
    "Allocation",
    "Caps",
    "Claim",
    "PlanSet",
    "PoolState",
    "Purpose",
    "Strategy",
    "WorkloadPlan",
    "allocation",
    "reads_forecast",
    "units_per_instance",
    "workload_plan",
]


class Strategy(StrEnum):
    """How the water-fill orders pools; SCO's own is depth-first, the others are baselines."""

    EXPECTED_COST = "expected-cost"          # ours: rate plus P(reclaim in 1 h) x what a reclaim costs the workload
    DEPTH_FIRST = "depth-first"              # the composite ranking (depth and interruption outweigh rate)
    PRICE_FIRST = "price-first"              # cheapest rate per unit first, same caps
    CAPACITY_OPTIMISED = "capacity-optimised"  # most available capacity first, same caps
    SINGLE_CHEAPEST = "single-cheapest"      # everything in the cheapest pool, no caps


def reads_forecast(strategy: Strategy | None) -> bool:
    """Whether a planner run with ``strategy`` reads the ranking's reclaim forecast.

    None is each contract's own strategy, expected-cost by default. Only expected-cost prices a pool's P(reclaim);
    the baselines order pools by rate, depth or capacity, and the forecast weighs nothing in them (rate + p x 0).
    """
    return strategy is None or strategy is Strategy.EXPECTED_COST


class Purpose(StrEnum):
    """Why units sit in a pool: the guaranteed floor or reclaimable capacity."""

    FLOOR = "floor"
    RECLAIMABLE = "reclaimable"


@dataclass(frozen=True)
class Caps:
    """Diversification rules (ADR-06, ADR-07, ADR-22). Shares of the workload's reclaimable units."""

    pool_share: Decimal = Decimal("0.15")
    group_share: Decimal = Decimal("0.30")
    # a hall is a correlation group beside the aggregates (ADR-06): a hall-wide loss takes every aggregate in it.
    # 40 %, not 30 %: three halls at 30 % could not hold a whole claim; applied when the shape's pools with room
    # span >= ``hall_min_halls`` halls, at max(40 %, ceil(units / halls)). Where the halls at that share cannot
    # hold the claim with room to spare (two halls: 50 % each), the hall cap is a preference: what a fill under
    # it leaves short is topped up without it. 3 lifts the cap at two halls: seed 2's 30-day month lost 65 % of a
    # claim in one hall that way; at 2 (the default since the four-seed, 30-day comparison) the worst 5-min loss
    # fell from 65 % to 55 % and interruptions/h from 1.54 to 1.47 (docs/benchmarks.md)
    hall_share: Decimal = Decimal("0.40")
    probation_share: Decimal = Decimal("0.05")
    min_pools: int = 8
    floor_min_halls: int = 3
    hall_min_halls: int = 2
    floor_hall_share: Decimal = Decimal("0.40")

    def hall_cap(self, target: int, halls: int) -> tuple[int, bool]:
        """The units one hall may hold of ``target`` when the pools with room span ``halls`` halls.

        The second value says whether that cap is only a preference: what a fill under it leaves short is
        topped up without it.
        """
        if halls < max(1, self.hall_min_halls) or halls < 2:
            return target, False
        n, d = share_ratio(self.hall_share)
        cap = max(1, target * n // d, -(-target // halls))
        return cap, cap < target and halls * n < d


_RATIOS: dict[Decimal, tuple[int, int]] = {}


def share_ratio(share: Decimal) -> tuple[int, int]:
    """``share`` as an integer ratio (cached: the caps are a handful of shares, read for every fill)."""
    ratio = _RATIOS.get(share)
    if ratio is None:
        ratio = _RATIOS[share] = share.as_integer_ratio()
    return ratio


@dataclass(frozen=True)
class PoolState:
    """A pool as observed now: the ranking in force, its correlation group, what can still be had."""

    pool: Pool
    available_instances: int
    score: float = 0.0            # composite ranking in force, higher = deeper / safer
    group: str = ""               # correlation group in force (default: the host aggregate)
    excluded: bool = False
    probation: bool = False
    rate_override: Decimal | None = None  # the rate card in force, when it differs from the catalogue
    # P(an instance placed now is reclaimed within 1 h): the ranking's forecast, else the controller's baseline
    # (``risk.baseline_reclaim_p``); None: neither, and the catalogue's interruption rate stands in (``reclaim_p``)
    reclaim_p_1h: float | None = None

    @property
    def reclaim_p(self) -> float:
        """P(reclaim within 1 h) the planner uses.

        ``reclaim_p_1h`` held to [0, 1]; none, or not a number: from the catalogue's interruption rate (a NaN in an
        order key would make the ranking depend on the sort).
        """
        p = self.reclaim_p_1h
        if p is not None and not math.isnan(p):
            return min(1.0, max(0.0, p))
        return 1.0 - math.exp(-float(self.pool.interruption_rate_pct_h) / 100.0)

    @property
    def pool_id(self) -> str:
        """The pool's id."""
        return self.pool.pool_id

    @property
    def rate_eur_h(self) -> Decimal:
        """The rate in force (EUR/h per instance): the rate card's, else the catalogue's."""
        return self.pool.rate_eur_h if self.rate_override is None else self.rate_override

    @property
    def discount_ratio(self) -> Decimal:
        """The rate in force as a share of the guaranteed rate (1 when there is none)."""
        g = self.pool.guaranteed_rate_eur_h
        return self.rate_eur_h / g if g else Decimal(1)

    @property
    def group_id(self) -> str:
        """The correlation group in force, else the pool's host aggregate."""
        return self.group or self.pool.aggregate


@dataclass(frozen=True)
class Claim:
    """Pending work of one workload, normalised: how many units it wants now.

    ``covered``: units of it running on fallback capacity now (ADR-23, ADR-24). Fallback does that work until it is
    returned, so the reclaimable part of the plan is that much smaller; a plan that bought reclaimable capacity for
    it too paid twice for the same units for the hour or more a return waits.
    """

    contract: Contract
    units: int
    covered: int = 0

    @cached_property
    def workload(self) -> str:
        """The claiming workload's name."""
        return self.contract.workload

    @cached_property
    def digest(self) -> str:
        """``<workload>@<version>:<units>[-<covered>]``: a plan is redone only when this changes (computed once)."""
        if self.covered:
            return f"{self.contract.ref}:{self.units}-{self.covered}"
        return f"{self.contract.ref}:{self.units}"


@dataclass(frozen=True, slots=True)
class Allocation:
    """Units of one workload placed in one pool, for the floor or as reclaimable capacity.

    Attributes:
        units: workload units placed.
        instances: instances needed to hold them.
        rate_eur_h: the rate per instance the plan was made at (EUR/h).
    """

    pool_id: str
    purpose: Purpose
    units: int
    instances: int
    rate_eur_h: Decimal

    @property
    def cost_eur_h(self) -> Decimal:
        """What the allocation costs per hour (EUR/h)."""
        return self.rate_eur_h * self.instances


@dataclass(frozen=True, slots=True)
class WorkloadPlan:
    """The plan of one workload: its allocations, what was wanted and what could not be placed."""

    workload: str
    claim_digest: str
    strategy: Strategy
    allocations: tuple[Allocation, ...]
    wanted_units: int
    floor_units: int
    shortfall_units: int
    cheapest_cost_eur_h: Decimal
    notes: tuple[str, ...] = ()

    @property
    def cost_eur_h(self) -> Decimal:
        """What the whole plan costs per hour (EUR/h)."""
        return sum((a.cost_eur_h for a in self.allocations), Decimal(0))

    @property
    def depth_premium_eur_h(self) -> Decimal:
        """What depth cost against the cheapest eligible placement under the same caps (ADR-08)."""
        reclaimable = sum((a.cost_eur_h for a in self.allocations if a.purpose is Purpose.RECLAIMABLE), Decimal(0))
        return reclaimable - self.cheapest_cost_eur_h

    def units_in(self, purpose: Purpose) -> int:
        """Units placed for ``purpose``."""
        return sum(a.units for a in self.allocations if a.purpose is purpose)

    @property
    def pools(self) -> frozenset[str]:
        """The pools the plan uses."""
        return frozenset(a.pool_id for a in self.allocations)


@dataclass(frozen=True)
class PlanSet:
    """Every workload's plan at one generation, and which workloads this generation replanned.

    ``memory``: what the planner that made it remembers of it for the next pass (``keep.Summary``), carried with
    it explicitly instead of in a table keyed by object id. It never changes a plan (the next pass makes the same
    plans without it, reading every plan); it is not compared or shown, and a plan set built from another's
    plans (a copy with plans dropped, one read back from the database) has none that applies to it.
    """

    generation: int
    made_at: datetime
    plans: dict[str, WorkloadPlan] = field(default_factory=dict)
    replanned: tuple[str, ...] = ()
    memory: object | None = field(default=None, compare=False, repr=False)


_new = object.__new__


def _setters(cls: type, names: tuple[str, ...]) -> tuple[Callable[[object, object], None], ...]:
    """The ``__set__`` of each of a slotted class's field slots: what a frozen ``__init__`` ends up calling."""
    return tuple(cls.__dict__[name].__set__ for name in names)


_ALLOCATION = _setters(Allocation, ("pool_id", "purpose", "units", "instances", "rate_eur_h"))
_PLAN = _setters(WorkloadPlan, ("workload", "claim_digest", "strategy", "allocations", "wanted_units", "floor_units",
                                "shortfall_units", "cheapest_cost_eur_h", "notes"))


def allocation(pool_id: str, purpose: Purpose, units: int, instances: int, rate_eur_h: Decimal) -> Allocation:
    """``Allocation(...)`` for the planner's hot path: the same value, built without the frozen ``__setattr__``s.

    A frozen dataclass sets each field through ``object.__setattr__`` called from its ``__init__``; a plan makes
    thousands. Here each slot's own setter is called directly, a third cheaper again. Every field is
    a required argument, so none can be left out (``tests/controllers/planning/test_model.py``). Slotted: a
    plan's thousands of allocations and plans have no ``__dict__`` each for the collector to walk after the plan.
    """
    a = _new(Allocation)
    set_pool, set_purpose, set_units, set_instances, set_rate = _ALLOCATION
    set_pool(a, pool_id)
    set_purpose(a, purpose)
    set_units(a, units)
    set_instances(a, instances)
    set_rate(a, rate_eur_h)
    return a


def workload_plan(workload: str, claim_digest: str, strategy: Strategy, allocations: tuple[Allocation, ...],
                  wanted_units: int, floor_units: int, shortfall_units: int, cheapest_cost_eur_h: Decimal,
                  notes: tuple[str, ...]) -> WorkloadPlan:
    """``WorkloadPlan(...)`` for the planner's hot path, like ``allocation``."""
    p = _new(WorkloadPlan)
    s_workload, s_digest, s_strategy, s_allocations, s_wanted, s_floor, s_short, s_cheapest, s_notes = _PLAN
    s_workload(p, workload)
    s_digest(p, claim_digest)
    s_strategy(p, strategy)
    s_allocations(p, allocations)
    s_wanted(p, wanted_units)
    s_floor(p, floor_units)
    s_short(p, shortfall_units)
    s_cheapest(p, cheapest_cost_eur_h)
    s_notes(p, notes)
    return p


def units_per_instance(pool: Pool, contract: Contract) -> int:
    """How many units of ``contract`` one instance of ``pool`` holds (by vCPU, memory and GPU)."""
    r = contract.resources
    fits = min(pool.vcpu // r.vcpu, pool.memory_gib // r.memory_gib)
    if r.gpu:
        fits = min(fits, pool.gpu // r.gpu)
    return max(0, fits)
