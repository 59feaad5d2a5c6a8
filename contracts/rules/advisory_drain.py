"""FEAS001: a drain budget above 115 s cannot be met on the 120 s notice alone (ADR-03, ADR-16)."""

from __future__ import annotations

from ..findings import Finding, Severity
from .base import Rule, RuleContext

CODE = "FEAS001"


def check(ctx: RuleContext) -> list[Finding]:
    """Flag a drain budget above the notice's reach that lacks advisory drain (ADR-16)."""
    c, s = ctx.contract, ctx.settings
    if c.drain_budget_s <= s.advisory_threshold_s or c.advisory_drain:
        return []
    return [Finding(
        CODE, Severity.ERROR, "drain_budget_s", c.drain_budget_s,
        f"a drain budget above {s.advisory_threshold_s} s does not fit the {s.notice_s} s notice; "
        "it is a request to drain on the advisory, which this contract has not opted into.",
        f"lower drain_budget_s to {s.advisory_threshold_s} or less, or set advisory_drain: true "
        "(false positives are then charged to this workload, ADR-16).",
        workload=c.workload)]


RULE = Rule(CODE, "drain budget above 115 s needs advisory drain", check)
