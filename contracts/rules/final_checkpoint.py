"""FEAS002: the final checkpoint must be written inside the drain budget at the store's measured throughput."""

from __future__ import annotations

import math

from ..checkpoint_math import final_write_seconds
from ..findings import Finding, Severity
from ..schema import CheckpointMode
from .base import Rule, RuleContext

CODE = "FEAS002"


def check(ctx: RuleContext) -> list[Finding]:
    """Refuse a final checkpoint that cannot be written within the drain budget at the store's throughput."""
    c, s = ctx.contract, ctx.settings
    writes_final = c.checkpoint_mode is CheckpointMode.FINAL_ON_NOTICE_AND_PERIODIC or (
        c.checkpoint_mode is CheckpointMode.FRAMEWORK and c.final_checkpoint_gib > 0)
    if not writes_final:
        return []
    needed = final_write_seconds(c.final_checkpoint_gib, s.store_throughput_mib_s, s.final_write_overhead_s)
    if needed <= c.drain_budget_s:
        return []
    fits_gib = max(0.0, (c.drain_budget_s - s.final_write_overhead_s) * float(s.store_throughput_mib_s) / 1024)
    return [Finding(
        CODE, Severity.ERROR, "checkpoint.final_size_gib", c.final_checkpoint_gib,
        f"writing {c.final_checkpoint_gib} GiB at {s.store_throughput_mib_s} MiB/s plus "
        f"{s.final_write_overhead_s} s overhead takes {needed:.0f} s, more than drain_budget_s={c.drain_budget_s}.",
        f"shrink the final checkpoint to at most {math.floor(fits_gib * 10) / 10} GiB, raise drain_budget_s to "
        f"{math.ceil(needed)} (above {s.advisory_threshold_s} s needs advisory_drain), or use periodic mode only.",
        workload=c.workload)]


RULE = Rule(CODE, "final checkpoint fits the drain budget", check)
