"""FEAS007: a guaranteed floor needs the business unit's committed capacity in at least three halls.

ADR-22: so one hall's loss cannot take the floor with it.
"""

from __future__ import annotations

from ..findings import Finding, Severity
from .base import Rule, RuleContext

CODE = "FEAS007"


def check(ctx: RuleContext) -> list[Finding]:
    """Refuse a floor when committed capacity that fits a unit spans fewer halls than the minimum."""
    c, s = ctx.contract, ctx.settings
    if c.floor_pct == 0:
        return []
    halls = sorted({p.hall for p in ctx.committed})
    if len(halls) >= s.min_floor_halls:
        return []
    return [Finding(
        CODE, Severity.ERROR, "floor_pct", c.floor_pct,
        f"business unit {c.business_unit!r} has committed capacity fitting this unit in {len(halls)} hall(s) "
        f"({', '.join(halls) or 'none'}) of region {c.region}; a floor must span at least {s.min_floor_halls}.",
        "ask capacity governance for committed reservations in more halls, or choose a tier without a floor "
        "(T3, T5).",
        workload=c.workload)]


RULE = Rule(CODE, "floor has committed capacity over three halls", check)
