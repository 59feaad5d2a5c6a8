"""FEAS006: the periodic checkpoint interval is a loss budget (ADR-20).

The derived interval is the Young–Daly optimum for the unprotected-loss MTBF, capped at 60 min. A declared
interval above it is flagged (a warning: it compiles, and fails only with --strict).
"""

from __future__ import annotations

import math

from ..checkpoint_math import final_write_seconds, mtbf_unprotected_hours, young_daly_hours
from ..findings import Finding, Severity
from ..schema import CheckpointMode, Contract, Framework
from ..settings import CompilerSettings
from .base import Rule, RuleContext

CODE = "FEAS006"


def derived_interval_min(contract: Contract, settings: CompilerSettings) -> int | None:
    """The interval the agent and client use when none is declared; None for workloads that do not checkpoint."""
    if contract.checkpoint_mode is CheckpointMode.NONE or contract.framework is Framework.SLURM_REQUEUE:
        return None  # restarts from the start of the unit: FEAS003 bounds its loss instead
    cost_s = max(1.0, final_write_seconds(contract.final_checkpoint_gib, settings.store_throughput_mib_s, 0))
    mtbf = mtbf_unprotected_hours(settings.reclaim_rate_pct_h, settings.unprotected_share_pct)
    optimum_min = young_daly_hours(cost_s, mtbf) * 60
    return max(1, min(settings.checkpoint_interval_cap_min, math.floor(optimum_min)))


def check(ctx: RuleContext) -> list[Finding]:
    """Warn when the contract's checkpoint interval exceeds what the loss budget allows (Young–Daly)."""
    c, s = ctx.contract, ctx.settings
    derived = derived_interval_min(c, s)
    if derived is None or c.checkpoint_interval_min is None or c.checkpoint_interval_min <= derived:
        return []
    return [Finding(
        CODE, Severity.WARNING, "checkpoint.interval_min", c.checkpoint_interval_min,
        f"the loss budget allows at most {derived} min between checkpoints (Young–Daly for "
        f"{s.reclaim_rate_pct_h} %/h × {s.unprotected_share_pct} % unprotected, capped at "
        f"{s.checkpoint_interval_cap_min} min); up to {c.checkpoint_interval_min} min of work can be lost.",
        f"lower checkpoint.interval_min to {derived} or remove it to use the derived interval.",
        workload=c.workload)]


RULE = Rule(CODE, "periodic checkpoint interval within the loss budget", check)
