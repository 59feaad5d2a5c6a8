"""Placement planning (ADR-06, 07, 08, 22): pure functions, no I/O."""

from .model import (
    Allocation,
    Caps,
    Claim,
    PlanSet,
    PoolState,
    Purpose,
    Strategy,
    WorkloadPlan,
    reads_forecast,
    units_per_instance,
)
from .planner import PlannerConfig, plan, priority
from .scores import composite_score, pool_states

__all__ = [
    "Allocation",
    "Caps",
    "Claim",
    "PlanSet",
    "PlannerConfig",
    "PoolState",
    "Purpose",
    "Strategy",
    "WorkloadPlan",
    "composite_score",
    "plan",
    "pool_states",
    "priority",
    "reads_forecast",
    "units_per_instance",
]
