"""FEAS004: at least eight eligible reclaimable discount pools exist for the workload (ADR-06)."""

from __future__ import annotations

from ..findings import Finding, Severity
from .base import Rule, RuleContext

CODE = "FEAS004"


def check(ctx: RuleContext) -> list[Finding]:
    """Refuse a contract with fewer eligible reclaimable discount pools than the settings' minimum."""
    c, s = ctx.contract, ctx.settings
    eligible = ctx.eligible
    if len(eligible) >= s.min_pools:
        return []
    families = sorted({p.sku_family for p in ctx.catalogue.pools if p.region == c.region})
    return [Finding(
        CODE, Severity.ERROR, "eligible", len(eligible),
        f"only {len(eligible)} reclaimable discount pool(s) in region {c.region} fit a unit of "
        f"{c.resources.vcpu} vCPU / {c.resources.memory_gib} GiB / {c.resources.gpu} GPU with these "
        f"eligibility filters; at least {s.min_pools} are needed to stay within 15 % per pool.",
        f"widen eligible.sku_families (region has: {', '.join(families) or 'none'}), sizes or halls, "
        "or make the unit smaller.",
        workload=c.workload)]


RULE = Rule(CODE, "at least eight eligible pools", check)
