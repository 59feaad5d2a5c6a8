"""The five tiers of ADR-02 as data: each field's default and what a workload may do with it.

An override rule per field says whether a contract naming the tier may change it:
``fixed`` (never), ``free`` (any valid value), ``lower`` (may only lower or shorten), ``raise`` (may only
raise) or ``choices`` (one of a set). A bespoke contract starts from its ``nearest_tier`` and may override
anything; it is marked for review (TIER003).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from .findings import Finding, Severity
from .schema import (
    CheckpointMode,
    Contract,
    ContractSpec,
    FallbackPolicy,
    Framework,
    PlacementStrategy,
    RestartSemantics,
    TierName,
)

__all__ = ["TIERS", "Override", "Tier", "resolve"]

Kind = Literal["fixed", "free", "lower", "raise", "choices"]


@dataclass(frozen=True)
class Override:
    """What a contract may do to a tier-governed field: keep it fixed, set it freely, lower, raise, or choose."""

    kind: Kind
    choices: tuple[Any, ...] = ()

    def describe(self) -> str:
        """The rule in words, for a finding's message."""
        return {
            "fixed": "may not be changed",
            "free": "may be set",
            "lower": "may only be lowered",
            "raise": "may only be raised",
            "choices": "must be one of " + ", ".join(str(c) for c in self.choices),
        }[self.kind]


FIXED, FREE, LOWER, RAISE = Override("fixed"), Override("free"), Override("lower"), Override("raise")


def choices(*values: Any) -> Override:
    return Override("choices", tuple(values))


# Field paths as written in a contract file; ``checkpoint.mode`` is the ``mode`` key under ``checkpoint``.
FIELDS = (
    "drain_budget_s", "drain_signal", "advisory_drain", "checkpoint.mode", "checkpoint.framework",
    "checkpoint.interval_min", "checkpoint.final_size_gib", "restart", "max_interruption_rate_pct_h",
    "floor_pct", "deadline", "fallback.policy", "fallback.spend_cap_24h_eur", "fallback.approver",
    "max_unit_length_min",
)


@dataclass(frozen=True)
class Tier:
    """A service tier: its defaults, the override rule per field, the required fields and its placement."""

    name: TierName
    title: str
    defaults: dict[str, Any]
    rules: dict[str, Override]
    required: tuple[str, ...] = ()
    placement: PlacementStrategy = PlacementStrategy.DEPTH_FIRST
    notes: str = ""


_CKPT_REQUIRED = choices(CheckpointMode.FINAL_ON_NOTICE_AND_PERIODIC, CheckpointMode.FRAMEWORK,
                         CheckpointMode.PERIODIC)
_RESTARTABLE = choices(RestartSemantics.IDEMPOTENT, RestartSemantics.OUTPUT_COMMIT)

TIERS: dict[TierName, Tier] = {
    TierName.T1: Tier(
        TierName.T1, "deadline batch",
        defaults={"drain_budget_s": 90, "drain_signal": "SIGTERM", "advisory_drain": False,
                  "checkpoint.mode": CheckpointMode.FINAL_ON_NOTICE_AND_PERIODIC, "checkpoint.framework": None,
                  "checkpoint.interval_min": None, "checkpoint.final_size_gib": Decimal("1"),
                  "restart": RestartSemantics.OUTPUT_COMMIT, "max_interruption_rate_pct_h": Decimal("5"),
                  "floor_pct": 30, "deadline": None, "fallback.policy": FallbackPolicy.AUTOMATIC_WITHIN_CAP,
                  "fallback.spend_cap_24h_eur": None, "fallback.approver": None, "max_unit_length_min": None},
        rules={"drain_budget_s": FREE, "drain_signal": FREE, "advisory_drain": FREE,
               "checkpoint.mode": _CKPT_REQUIRED, "checkpoint.framework": FREE, "checkpoint.interval_min": FREE,
               "checkpoint.final_size_gib": FREE, "restart": _RESTARTABLE, "max_interruption_rate_pct_h": LOWER,
               "floor_pct": RAISE, "deadline": FREE, "fallback.policy": FIXED, "fallback.spend_cap_24h_eur": FREE,
               "fallback.approver": FREE, "max_unit_length_min": FREE},
        required=("deadline", "fallback.spend_cap_24h_eur", "fallback.approver"),
        notes="30% floor, checkpointing required, automatic fallback within a spend cap",
    ),
    TierName.T2: Tier(
        TierName.T2, "checkpointed long-running",
        defaults={"drain_budget_s": 90, "drain_signal": "SIGTERM", "advisory_drain": False,
                  "checkpoint.mode": CheckpointMode.FINAL_ON_NOTICE_AND_PERIODIC, "checkpoint.framework": None,
                  "checkpoint.interval_min": None, "checkpoint.final_size_gib": Decimal("2"),
                  "restart": RestartSemantics.IDEMPOTENT, "max_interruption_rate_pct_h": Decimal("8"),
                  "floor_pct": 10, "deadline": None, "fallback.policy": FallbackPolicy.ON_BREACH_WITHIN_CAP,
                  "fallback.spend_cap_24h_eur": None, "fallback.approver": None, "max_unit_length_min": None},
        rules={"drain_budget_s": FREE, "drain_signal": FREE, "advisory_drain": FREE,
               "checkpoint.mode": _CKPT_REQUIRED, "checkpoint.framework": FREE, "checkpoint.interval_min": FREE,
               "checkpoint.final_size_gib": FREE, "restart": _RESTARTABLE, "max_interruption_rate_pct_h": LOWER,
               "floor_pct": RAISE, "deadline": FIXED, "fallback.policy": FIXED, "fallback.spend_cap_24h_eur": FREE,
               "fallback.approver": FREE, "max_unit_length_min": FIXED},
        required=("fallback.spend_cap_24h_eur", "fallback.approver"),
        notes="10% floor, checkpointing required, fallback on breach within a cap",
    ),
    TierName.T3: Tier(
        TierName.T3, "requeue",
        defaults={"drain_budget_s": 30, "drain_signal": "SIGUSR1", "advisory_drain": False,
                  "checkpoint.mode": CheckpointMode.NONE, "checkpoint.framework": None,
                  "checkpoint.interval_min": None, "checkpoint.final_size_gib": Decimal("0"),
                  "restart": RestartSemantics.IDEMPOTENT, "max_interruption_rate_pct_h": Decimal("10"),
                  "floor_pct": 0, "deadline": None, "fallback.policy": FallbackPolicy.NONE,
                  "fallback.spend_cap_24h_eur": Decimal("0"), "fallback.approver": None,
                  # 60 min keeps rate × length ÷ 2 within 3 % up to 6 %/h; 90 min has no margin above 4 %/h
                  "max_unit_length_min": 60},
        rules={"drain_budget_s": LOWER, "drain_signal": FREE, "advisory_drain": FIXED,
               "checkpoint.mode": choices(CheckpointMode.NONE, CheckpointMode.FRAMEWORK),
               "checkpoint.framework": choices(None, Framework.SLURM_REQUEUE, Framework.SPARK),
               "checkpoint.interval_min": FIXED, "checkpoint.final_size_gib": FIXED, "restart": _RESTARTABLE,
               "max_interruption_rate_pct_h": LOWER, "floor_pct": FIXED, "deadline": FIXED,
               "fallback.policy": FIXED, "fallback.spend_cap_24h_eur": FIXED, "fallback.approver": FIXED,
               "max_unit_length_min": LOWER},
        notes="no floor, no checkpoint; units bounded by the wasted-work budget (may shorten, not add a floor)",
    ),
    TierName.T4: Tier(
        TierName.T4, "stateless service",
        defaults={"drain_budget_s": 60, "drain_signal": "SIGTERM", "advisory_drain": False,
                  "checkpoint.mode": CheckpointMode.NONE, "checkpoint.framework": None,
                  "checkpoint.interval_min": None, "checkpoint.final_size_gib": Decimal("0"),
                  "restart": RestartSemantics.IDEMPOTENT, "max_interruption_rate_pct_h": Decimal("5"),
                  "floor_pct": 30, "deadline": None, "fallback.policy": FallbackPolicy.AUTOMATIC_WITHIN_CAP,
                  "fallback.spend_cap_24h_eur": None, "fallback.approver": None, "max_unit_length_min": None},
        rules={"drain_budget_s": LOWER, "drain_signal": FREE, "advisory_drain": FIXED,
               "checkpoint.mode": FIXED, "checkpoint.framework": FIXED, "checkpoint.interval_min": FIXED,
               "checkpoint.final_size_gib": FIXED, "restart": FIXED, "max_interruption_rate_pct_h": LOWER,
               "floor_pct": RAISE, "deadline": FIXED, "fallback.policy": FIXED, "fallback.spend_cap_24h_eur": FREE,
               "fallback.approver": FREE, "max_unit_length_min": FIXED},
        required=("fallback.spend_cap_24h_eur", "fallback.approver"),
        notes="30% floor, connection drain inside 60 s, replacement before loss",
    ),
    TierName.T5: Tier(
        TierName.T5, "opportunistic",
        defaults={"drain_budget_s": 30, "drain_signal": "SIGTERM", "advisory_drain": False,
                  "checkpoint.mode": CheckpointMode.NONE, "checkpoint.framework": None,
                  "checkpoint.interval_min": None, "checkpoint.final_size_gib": Decimal("0"),
                  "restart": RestartSemantics.IDEMPOTENT, "max_interruption_rate_pct_h": Decimal("20"),
                  "floor_pct": 0, "deadline": None, "fallback.policy": FallbackPolicy.NONE,
                  "fallback.spend_cap_24h_eur": Decimal("0"), "fallback.approver": None,
                  "max_unit_length_min": None},
        rules={"drain_budget_s": LOWER, "drain_signal": FREE, "advisory_drain": FIXED,
               "checkpoint.mode": choices(CheckpointMode.NONE, CheckpointMode.PERIODIC,
                                          CheckpointMode.FINAL_ON_NOTICE_AND_PERIODIC),
               "checkpoint.framework": FIXED, "checkpoint.interval_min": FREE, "checkpoint.final_size_gib": FREE,
               "restart": _RESTARTABLE, "max_interruption_rate_pct_h": LOWER, "floor_pct": FIXED,
               "deadline": FIXED, "fallback.policy": FIXED, "fallback.spend_cap_24h_eur": FIXED,
               "fallback.approver": FIXED, "max_unit_length_min": FREE},
        placement=PlacementStrategy.PRICE_FIRST,
        notes="no floor and no fallback: waits rather than spends; price-first placement",
    ),
}


def _declared(spec: ContractSpec) -> dict[str, Any]:
    """The tier-governed fields the file actually set (unset fields are absent, not None)."""
    flat: dict[str, Any] = {}
    top = spec.model_dump(exclude_unset=True, by_alias=False)
    for name in FIELDS:
        if "." in name:
            group, key = name.split(".", 1)
            if key in top.get(group, {}):
                flat[name] = getattr(getattr(spec, group), key)
        elif name in top:
            flat[name] = getattr(spec, name)
    return flat


def _allowed(rule: Override, default: Any, value: Any) -> bool:
    if value == default:
        return True
    if rule.kind == "free":
        return True
    if rule.kind == "fixed":
        return False
    if rule.kind == "choices":
        return value in rule.choices
    if default is None or value is None:
        return rule.kind == "lower" and default is None
    return bool(value < default) if rule.kind == "lower" else bool(value > default)


def resolve(spec: ContractSpec) -> tuple[Contract | None, list[Finding]]:
    """Apply the tier: defaults for unset fields, refusal (TIER002) for overrides the tier does not allow."""
    findings: list[Finding] = []
    bespoke = spec.tier is TierName.BESPOKE
    base = spec.nearest_tier if bespoke and spec.nearest_tier is not None else spec.tier
    tier = TIERS[base]
    declared = _declared(spec)
    values = dict(tier.defaults)
    for name, value in declared.items():
        rule = tier.rules[name]
        if not bespoke and not _allowed(rule, tier.defaults[name], value):
            findings.append(Finding(
                "TIER002", Severity.ERROR, name, value,
                f"tier {tier.name} ({tier.title}) {rule.describe()} (tier default: {tier.defaults[name]}).",
                f"remove {name} to take the tier's value, choose another tier, or use tier: bespoke "
                f"with nearest_tier: {tier.name} (reviewed by the platform team).",
                workload=spec.workload))
        values[name] = value
    for name in tier.required:
        if values.get(name) is None:
            findings.append(Finding(
                "TIER004", Severity.ERROR, name, None,
                f"tier {tier.name} ({tier.title}) requires {name}.",
                f"add {name} to the contract.", workload=spec.workload))
    if bespoke:
        findings.append(Finding(
            "TIER003", Severity.INFO, "tier", "bespoke",
            f"bespoke contract based on {tier.name}; overrides are not limited by the tier.",
            "the platform team reviews it before merge" + (f" (review: {spec.review})" if spec.review else
                                                            "; add review: <ticket> to link the review."),
            workload=spec.workload))
    if any(f.severity is Severity.ERROR for f in findings):
        return None, findings
    contract = Contract(
        workload=spec.workload, version=spec.version, owner=spec.owner, business_unit=spec.business_unit,
        scheduler=spec.scheduler, partition=spec.partition, tier=spec.tier, base_tier=tier.name,
        needs_review=bespoke, description=spec.description,
        drain_budget_s=values["drain_budget_s"], drain_signal=values["drain_signal"],
        advisory_drain=values["advisory_drain"], checkpoint_mode=values["checkpoint.mode"],
        framework=values["checkpoint.framework"], checkpoint_interval_min=values["checkpoint.interval_min"],
        final_checkpoint_gib=values["checkpoint.final_size_gib"], restart=values["restart"],
        max_interruption_rate_pct_h=values["max_interruption_rate_pct_h"], floor_pct=values["floor_pct"],
        deadline=values["deadline"], fallback_policy=values["fallback.policy"],
        spend_cap_24h_eur=values["fallback.spend_cap_24h_eur"] or Decimal("0"),
        approver=values["fallback.approver"], max_unit_length_min=values["max_unit_length_min"],
        placement_strategy=tier.placement, resources=spec.resources, eligible=spec.eligible,
    )
    return contract, findings
