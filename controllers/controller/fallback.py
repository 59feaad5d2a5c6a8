"""The fallback arbiter (ADR-23, ADR-24), pure.

Above the floor, on an interruption-rate breach, five minutes of shortfall or deadline risk, launch
guaranteed capacity automatically up to the contract's 24-hour spend cap; each launch's cost over the
reservation horizon is **reserved in the ledger before the launch** (the caller does the reserving, in one
transaction, and launches only what was reserved). Beyond the cap, ask the named approver once with priced
options; without an answer in 15 minutes record shortfall and spend nothing more for that window.

Launches are staggered: at most 40 instances a minute per region, deadline risk first, then tier. Return
waits for 60 minutes of health (observed interruption below half the declared rate) and then gives back 20 %
of the fallback capacity an hour, newest first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from .breaker import tier_rank
from .model import Approval

__all__ = [
    "Approval",
    "ApprovalRequest",
    "FallbackConfig",
    "FallbackDecisions",
    "FallbackLaunch",
    "GuaranteedOption",
    "Need",
    "arbitrate",
    "healthy",
    "priced_options",
]


@dataclass(frozen=True)
class FallbackConfig:
    shortfall_after: timedelta = timedelta(minutes=5)
    approval_timeout: timedelta = timedelta(minutes=15)
    launches_per_minute: int = 40
    reserve_horizon: timedelta = timedelta(hours=24)
    healthy_for: timedelta = timedelta(minutes=60)
    return_share: Decimal = Decimal("0.20")
    return_every: timedelta = timedelta(hours=1)


@dataclass(frozen=True)
class GuaranteedOption:
    pool_id: str
    rate_eur_h: Decimal
    units_per_instance: int
    free_instances: int


@dataclass(frozen=True)
class Need:
    """One workload's situation this pass, computed by the loop from the plan, instances and events."""

    workload: str
    tier: str
    units_wanted: int               # units the reclaimable plan cannot hold now (shortfall + lost to a breach)
    short_since: datetime | None
    breach: bool                    # observed interruption rate above the declared rate
    deadline_risk: bool
    spend_cap_eur: Decimal
    committed_eur: Decimal          # held + consumed in the last 24 h (ledger)
    approver: str | None
    options: tuple[GuaranteedOption, ...]
    fallback_running: tuple[tuple[str, datetime], ...] = ()   # (instance id, launched at)
    healthy_since: datetime | None = None
    last_return_at: datetime | None = None
    approval: Approval | None = None
    policy: str = "automatic-within-cap"   # contracts.schema.FallbackPolicy value


@dataclass(frozen=True)
class FallbackLaunch:
    workload: str
    pool_id: str
    count: int
    amount_eur: Decimal             # to reserve before launching
    cause: str
    tier: str


@dataclass(frozen=True)
class ApprovalRequest:
    workload: str
    approver: str | None
    units: int
    options: tuple[dict[str, str], ...]
    cause: str


@dataclass(frozen=True)
class FallbackDecisions:
    launches: tuple[FallbackLaunch, ...] = ()
    approvals: tuple[ApprovalRequest, ...] = ()
    shortfalls: tuple[tuple[str, int, str], ...] = ()        # (workload, units, cause)
    returns: tuple[tuple[str, str], ...] = ()                # (workload, instance id)
    held_by_rate: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)


def _cost(option: GuaranteedOption, count: int, horizon: timedelta) -> Decimal:
    hours = Decimal(horizon.total_seconds()) / Decimal(3600)
    return (option.rate_eur_h * count * hours).quantize(Decimal("0.000001"))


def priced_options(units: int, options: Sequence[GuaranteedOption], horizon: timedelta) -> tuple[dict[str, str], ...]:
    """What the approver is offered: cover all, cover half, or accept the shortfall — each with its price."""
    if not options:
        return ({"option": "accept-shortfall", "units": str(units), "cost_eur": "0"},)
    best = min(options, key=lambda o: (o.rate_eur_h / o.units_per_instance, o.pool_id))
    out = []
    for label, share in (("cover-all", 1.0), ("cover-half", 0.5)):
        n = max(1, math.ceil(units * share / best.units_per_instance))
        out.append({"option": label, "pool": best.pool_id, "instances": str(n),
                    "units": str(n * best.units_per_instance), "cost_eur": str(_cost(best, n, horizon)),
                    "horizon_h": str(horizon.total_seconds() / 3600)})
    out.append({"option": "accept-shortfall", "units": str(units), "cost_eur": "0"})
    return tuple(out)


def _trigger(n: Need, now: datetime, config: FallbackConfig) -> str | None:
    if n.units_wanted <= 0 or n.policy == "none":
        return None
    if n.policy == "on-breach-within-cap":
        return "interruption-rate breach" if n.breach else None
    if n.deadline_risk:
        return "deadline risk"
    if n.breach:
        return "interruption-rate breach"
    if n.short_since is not None and now - n.short_since >= config.shortfall_after:
        return f"shortfall for {int((now - n.short_since).total_seconds())} s"
    return None


def arbitrate(needs: Sequence[Need], now: datetime, *, launches_left: int,
              config: FallbackConfig | None = None) -> FallbackDecisions:
    """Decide fallback launches, approval requests, shortfall records and returns for this pass.

    ``launches_left``: instances the region's 40/min fallback window still allows."""
    config = config or FallbackConfig()
    launches: list[FallbackLaunch] = []
    approvals: list[ApprovalRequest] = []
    shortfalls: list[tuple[str, int, str]] = []
    returns: list[tuple[str, str]] = []
    held = 0
    ordered = sorted(needs, key=lambda n: (not n.deadline_risk, tier_rank(n.tier), n.workload))
    for n in ordered:
        cause = _trigger(n, now, config)
        a = n.approval
        if a is not None and a.state == "pending" and now - a.requested_at >= config.approval_timeout:
            shortfalls.append((n.workload, max(n.units_wanted, a.units),
                               f"no answer from {n.approver or 'the approver'} within {config.approval_timeout}"))
            continue
        if cause is None:
            returns.extend(_returns(n, now, config))
            continue
        authority = n.spend_cap_eur + (n.approval.granted_eur if n.approval else Decimal(0)) - n.committed_eur
        remaining_units = n.units_wanted
        for opt in sorted(n.options, key=lambda o: (o.rate_eur_h / o.units_per_instance, o.pool_id)):
            if remaining_units <= 0:
                break
            want = min(math.ceil(remaining_units / opt.units_per_instance), opt.free_instances)
            per = _cost(opt, 1, config.reserve_horizon)
            affordable = int(authority // per) if per > 0 else want
            count = min(want, affordable, launches_left)
            if want > launches_left:
                held += want - max(launches_left, 0)
            if count <= 0:
                continue
            amount = per * count
            launches.append(FallbackLaunch(n.workload, opt.pool_id, count, amount, cause, n.tier))
            authority -= amount
            launches_left -= count
            remaining_units -= count * opt.units_per_instance
        if remaining_units > 0 and launches_left > 0:
            beyond = authority < min((_cost(o, 1, config.reserve_horizon) for o in n.options), default=Decimal(0)) \
                or not n.options
            if not beyond:
                continue
            if a is None:
                approvals.append(ApprovalRequest(n.workload, n.approver, remaining_units,
                                                 priced_options(remaining_units, n.options, config.reserve_horizon),
                                                 f"{cause}; 24 h spend cap {n.spend_cap_eur} EUR reached"))
    return FallbackDecisions(tuple(launches), tuple(approvals), tuple(shortfalls), tuple(returns), held)


def _returns(n: Need, now: datetime, config: FallbackConfig) -> list[tuple[str, str]]:
    if not n.fallback_running or n.healthy_since is None or now - n.healthy_since < config.healthy_for:
        return []
    if n.last_return_at is not None and now - n.last_return_at < config.return_every:
        return []
    count = max(1, math.ceil(len(n.fallback_running) * config.return_share))
    newest_first = sorted(n.fallback_running, key=lambda r: (r[1], r[0]), reverse=True)
    return [(n.workload, iid) for iid, _ in newest_first[:count]]


def healthy(observed_rate_pct_h: float, declared_rate_pct_h: float) -> bool:
    """ADR-24: health is an observed interruption rate below half the declared one."""
    return observed_rate_pct_h < declared_rate_pct_h / 2
