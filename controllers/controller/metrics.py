"""The controller's metrics (ADR-28): what one partition's controller exports after every pass.

``PassMetrics.record`` turns a pass — its report, its decision, what it observed — into series of a
``stores.telemetry.Registry``; the process (``sco controller run --metrics-port``) serves the registry. Reads
nothing from the provider; one small query for the age of the rankings in force, on the pass thread and on a
connection of its own. Names and meanings: docs/operations.md "## Metrics".
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from contracts.schema import Contract
from controllers.providers.budget import TokenBucket
from stores.telemetry import Labels, Registry

from .decision import Decision, Desired, WritePlans
from .fallback_pass import interruption_rate_pct_h
from .model import Observation, Purpose
from .settings import PassReport

__all__ = ["SERIES", "PassMetrics", "PassView"]

SERIES: tuple[tuple[str, str, str], ...] = (
    ("sco_controller_pass_duration_seconds", "histogram", "One pass: lease, observe, decide, apply."),
    ("sco_controller_passes_total", "counter", "Passes, by role (leader or follower: a follower does nothing)."),
    ("sco_controller_pass_failures_total", "counter", "Passes that raised (a store or the provider away)."),
    ("sco_controller_actions_total", "counter", "Decided actions, by kind."),
    ("sco_controller_events_total", "counter", "Lifecycle events emitted, by kind."),
    ("sco_controller_instances_launched_total", "counter", "Instances launched."),
    ("sco_controller_instances_terminated_total", "counter", "Instances terminated."),
    ("sco_controller_held_actions", "gauge", "Launches and terminations held back by the safety rules last pass."),
    ("sco_controller_token_budget_rate_per_second", "gauge", "This partition's mutating provider calls per second."),
    ("sco_controller_token_budget_spent_total", "counter", "Mutating provider calls admitted by the token budget."),
    ("sco_controller_token_budget_throttled_total", "counter", "Mutating provider calls refused by the budget."),
    ("sco_controller_breaker_open", "gauge", "1 while the termination breaker is open."),
    ("sco_controller_read_only", "gauge", "1 when the last pass was a read-only cycle."),
    ("sco_controller_leader", "gauge", "1 while this process (holder) holds the partition's lease."),
    ("sco_controller_shortfall_units", "gauge", "Claimed units the plan cannot place now, per workload."),
    ("sco_controller_shortfall_seconds", "gauge", "Seconds the workload has been short (0: not short)."),
    ("sco_controller_fallback_spend_eur", "gauge", "Fallback spend held and consumed in the last 24 h (EUR)."),
    ("sco_controller_fallback_cap_eur", "gauge", "The contract's fallback spend cap per 24 h (EUR)."),
    ("sco_controller_interruption_rate_pct_per_hour", "gauge",
     "Measured interruption rate: notices in the breach window per live instance, % per hour."),
    ("sco_contract_max_interruption_rate_pct_per_hour", "gauge", "The contract's declared tolerable rate, % per hour."),
    ("sco_contract_info", "gauge", "1 per contract in force: its owner, approver, tier and business unit."),
    ("sco_controller_rankings_age_seconds", "gauge", "Age of the newest ranking in force in the region."),
    ("sco_controller_pools_excluded", "gauge", "Pools excluded in the region, as the controller read them."),
    ("sco_controller_bundle_generation", "gauge", "Generation of the controller bundle in force."),
    ("sco_controller_bundle_refreshed_total", "counter", "Newer controller bundles taken from the distributor."),
    ("sco_controller_bundle_refused_total", "counter",
     "Controller bundles refused from the distributor (the held one stays), by code: BND001 signature, BND002 "
     "older generation or fork, BND003 other partition, BND004 governed change without governance signature."),
)
_LEADER_ONLY = ("sco_controller_held_actions", "sco_controller_breaker_open", "sco_controller_read_only",
                "sco_controller_shortfall_units", "sco_controller_shortfall_seconds",
                "sco_controller_fallback_spend_eur", "sco_controller_interruption_rate_pct_per_hour",
                "sco_controller_rankings_age_seconds", "sco_controller_pools_excluded")
_ACTION_KINDS = {"Place": "place", "Terminate": "terminate", "StartFallback": "start_fallback",
                 "AskApproval": "ask_approval", "RecordShortfall": "record_shortfall", "OpenBreaker": "open_breaker",
                 "Revoke": "revoke", "Publish": "publish", "WritePlans": "write_plans", "WriteClaims": "write_claims"}


@dataclass(frozen=True)
class PassView:
    """One pass as the metrics see it: the report, and for a leader's pass its decision and observation."""

    report: PassReport
    seconds: float
    now: datetime
    decision: Decision | None = None
    seen: Observation | None = None


class PassMetrics:
    """One partition controller's series in ``registry``; ``record`` after every pass, ``failed`` on an error."""

    def __init__(self, registry: Registry, desired: Desired, *, bucket: TokenBucket | None = None,
                 conn: Any = None) -> None:
        self.registry, self.desired, self.bucket, self.conn = registry, desired, bucket, conn
        registry.describe_all(SERIES)
        self._contracts(desired.contracts)
        if bucket is not None:
            registry.set("sco_controller_token_budget_rate_per_second", bucket.rate)
        for name in ("sco_controller_passes_total", "sco_controller_pass_failures_total"):
            registry.inc(name, 0.0, **({"role": "leader"} if name.endswith("passes_total") else {}))

    def _contracts(self, contracts: Mapping[str, Contract]) -> None:
        newest: dict[str, Contract] = {}
        for c in contracts.values():
            if c.workload not in newest or c.version > newest[c.workload].version:
                newest[c.workload] = c
        r = self.registry
        r.replace("sco_contract_info", {(("workload", w), ("owner", c.owner), ("approver", c.approver or ""),
                                         ("tier", str(c.base_tier)), ("business_unit", c.business_unit)): 1.0
                                        for w, c in newest.items()})
        r.replace("sco_contract_max_interruption_rate_pct_per_hour",
                  {(("workload", w),): float(c.max_interruption_rate_pct_h) for w, c in newest.items()})
        r.replace("sco_controller_fallback_cap_eur",
                  {(("workload", w),): float(c.spend_cap_24h_eur) for w, c in newest.items()})

    def use(self, desired: Desired) -> None:
        """The desired state of the next passes (a refreshed bundle): the contract series follow it."""
        self.desired = desired
        self._contracts(desired.contracts)

    def failed(self) -> None:
        """A pass raised."""
        self.registry.inc("sco_controller_pass_failures_total")

    def record(self, view: PassView) -> None:
        """Everything one pass tells."""
        r, report = self.registry, view.report
        r.observe("sco_controller_pass_duration_seconds", view.seconds)
        r.inc("sco_controller_passes_total", role="leader" if report.leader else "follower")
        r.replace("sco_controller_leader", {(("holder", self.desired.settings.holder),): float(report.leader)})
        if self.bucket is not None:
            r.set("sco_controller_token_budget_spent_total", float(self.bucket.spent))
            r.set("sco_controller_token_budget_throttled_total", float(getattr(self.bucket, "refused", 0)))
        if not report.leader:  # what only the leader knows must not linger from an earlier tenure
            for name in _LEADER_ONLY:
                r.replace(name, {})
            return
        r.inc("sco_controller_instances_launched_total", report.launched)
        r.inc("sco_controller_instances_terminated_total", report.terminated)
        r.set("sco_controller_held_actions", report.held)
        r.set("sco_controller_read_only", float(report.read_only))
        for kind, n in Counter(report.events).items():
            r.inc("sco_controller_events_total", n, kind=kind)
        if view.decision is not None:
            self._decision(view.decision, view.now)
        if view.seen is not None:
            self._seen(view.seen)
        self._rankings_age(view.now)

    def _decision(self, decision: Decision, now: datetime) -> None:
        r = self.registry
        for kind, n in Counter(_ACTION_KINDS.get(type(a).__name__, "other") for a in decision.actions).items():
            r.inc("sco_controller_actions_total", n, kind=kind)
        r.set("sco_controller_breaker_open", float(decision.memory.safety.tripped))
        plans = decision.of(WritePlans)
        if not plans:
            return
        units: dict[Labels, float] = {}
        since: dict[Labels, float] = {}
        for w, p in plans[-1].plans.items():
            c = self.desired.contract(w)
            key = (("workload", w), ("tier", str(c.base_tier) if c else ""))
            units[key] = float(p.shortfall_units)
            started = decision.memory.short_since.get(w)
            since[key] = max(0.0, (now - started).total_seconds()) if started and p.shortfall_units else 0.0
        r.replace("sco_controller_shortfall_units", units)
        r.replace("sco_controller_shortfall_seconds", since)

    def _seen(self, seen: Observation) -> None:
        r = self.registry
        window = self.desired.settings.breach_window
        live: Counter[str] = Counter(o.workload for o in seen.instances
                                     if o.live and o.purpose is not Purpose.FALLBACK)
        rates: dict[Labels, float] = {}
        for c in self.desired.contracts.values():
            notices = seen.glance.notices.get(c.workload, 0)
            rates[(("workload", c.workload),)] = interruption_rate_pct_h(notices, live[c.workload], window)
        r.replace("sco_controller_interruption_rate_pct_per_hour", rates)
        spend: dict[Labels, float] = {(("workload", c.workload),): float(seen.committed_eur.get(c.workload, Decimal(0)))
                 for c in self.desired.contracts.values()}
        r.replace("sco_controller_fallback_spend_eur", spend)
        r.set("sco_controller_pools_excluded", float(len(seen.market.inputs.excluded)))

    def _rankings_age(self, now: datetime) -> None:
        """Seconds since the newest ranking in force (+Inf when none is): on the pass's clock."""
        if self.conn is None:
            return
        with self.conn.transaction():
            row = self.conn.execute("SELECT max(ranked_at) FROM rankings_in_force WHERE region = %s",
                                    (self.desired.settings.region,)).fetchone()
        newest = row[0] if row is not None else None
        age = math.inf if newest is None else max(0.0, (now - newest).total_seconds())
        self.registry.set("sco_controller_rankings_age_seconds", age)
