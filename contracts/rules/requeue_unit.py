"""FEAS003: a requeued unit's expected loss must stay within the wasted-work budget (ADR-20).

A requeued unit loses on average half its length, so rate × length ÷ 2 is compared with the budget.
"""

from __future__ import annotations

import math
from decimal import Decimal

from ..checkpoint_math import requeue_waste_pct
from ..findings import Finding, Severity
from ..schema import CheckpointMode, Framework
from .base import Rule, RuleContext

CODE = "FEAS003"


def check(ctx: RuleContext) -> list[Finding]:
    """Refuse a unit that restarts from scratch when its expected requeue waste exceeds the budget."""
    c, s = ctx.contract, ctx.settings
    restarts_from_scratch = c.checkpoint_mode is CheckpointMode.NONE or (
        c.checkpoint_mode is CheckpointMode.FRAMEWORK and c.framework is Framework.SLURM_REQUEUE)
    if not restarts_from_scratch or c.max_unit_length_min is None:
        return []
    rate = ctx.expected_rate_pct_h()
    waste = requeue_waste_pct(rate, c.max_unit_length_min)
    if waste <= float(s.wasted_work_budget_pct) + 1e-9:
        return []
    longest = math.floor(float(s.wasted_work_budget_pct * 2 / rate) * 60)
    return [Finding(
        CODE, Severity.ERROR, "max_unit_length_min", c.max_unit_length_min,
        f"at {rate.quantize(Decimal('0.01'))} %/h reclaimed, a {c.max_unit_length_min}-min unit wastes "
        f"{waste:.2f} % of its hours (rate × length ÷ 2), above the {s.wasted_work_budget_pct} % budget.",
        f"split the work into units of at most {longest} min, or checkpoint (checkpoint.mode).",
        workload=c.workload)]


RULE = Rule(CODE, "requeue unit length within the wasted-work budget", check)
