"""Feasibility rules, one module a rule, each with a stable code."""

from __future__ import annotations

from . import (
    advisory_drain,
    checkpoint_interval,
    eligible_pools,
    final_checkpoint,
    floor_capacity,
    not_restartable,
    requeue_unit,
)
from .base import Rule, RuleContext
from .checkpoint_interval import derived_interval_min

RULES: tuple[Rule, ...] = (
    advisory_drain.RULE,
    final_checkpoint.RULE,
    requeue_unit.RULE,
    eligible_pools.RULE,
    not_restartable.RULE,
    checkpoint_interval.RULE,
    floor_capacity.RULE,
)

__all__ = ["RULES", "Rule", "RuleContext", "derived_interval_min"]
