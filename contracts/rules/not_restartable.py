"""FEAS005: work that cannot restart is not admitted to reclaimable capacity (ADR-21)."""

from __future__ import annotations

from ..findings import Finding, Severity
from ..schema import RestartSemantics
from .base import Rule, RuleContext

CODE = "FEAS005"


def check(ctx: RuleContext) -> list[Finding]:
    """Refuse not-restartable work: it is not admitted to reclaimable capacity."""
    c = ctx.contract
    if c.restart is not RestartSemantics.NOT_RESTARTABLE:
        return []
    return [Finding(
        CODE, Severity.ERROR, "restart", str(c.restart),
        "not-restartable work is not admitted to reclaimable capacity.",
        "run it on guaranteed capacity, or make it restartable: idempotent, or output-commit "
        "(results staged and published on completion).",
        workload=c.workload)]


RULE = Rule(CODE, "not-restartable work is refused", check)
