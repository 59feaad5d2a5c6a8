"""Summaries of replay outcomes: per workload, and strategies side by side on the same trace."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from contracts.pools import Pool

from ..planning import Strategy
from .engine import StepLoss, WorkloadOutcome

__all__ = ["TARGETS", "StrategySummary", "explain_step", "summarise", "verdicts"]

# the one-pager's quality targets the replay can measure
TARGETS = {"shortfall_pct": 0.1, "wasted_pct": 3.0, "net_pct": 55.0}


@dataclass(frozen=True)
class StrategySummary:
    strategy: Strategy
    interruptions: int
    instance_hours: float
    wasted_unit_hours: float
    reclaimable_unit_hours: float
    fallback_starts: int
    shortfall_unit_hours: float
    unit_hours_wanted: float
    counterfactual: Decimal
    cost: Decimal
    net_saving: Decimal
    net_saving_planning: Decimal
    depth_premium: Decimal
    worst_step_loss_pct: float  # the largest share of one workload's claim lost in one step, any workload

    @property
    def interruption_rate_pct_h(self) -> float:
        """Interruptions per 100 instance-hours."""
        return 100.0 * self.interruptions / self.instance_hours if self.instance_hours else 0.0

    @property
    def wasted_pct(self) -> float:
        """Wasted unit-hours as a share of the reclaimable unit-hours, in %."""
        return 100.0 * self.wasted_unit_hours / self.reclaimable_unit_hours if self.reclaimable_unit_hours else 0.0

    @property
    def net_pct(self) -> float:
        """Net saving as a share of the counterfactual, in %."""
        return float(100 * self.net_saving / self.counterfactual) if self.counterfactual else 0.0

    @property
    def net_planning_pct(self) -> float:
        """Net saving at planning rates as a share of the counterfactual, in %."""
        return float(100 * self.net_saving_planning / self.counterfactual) if self.counterfactual else 0.0

    @property
    def shortfall_pct(self) -> float:
        """Unit-hours short as a share of the unit-hours wanted, in %."""
        return 100.0 * self.shortfall_unit_hours / self.unit_hours_wanted if self.unit_hours_wanted else 0.0


def summarise(strategy: Strategy, outcomes: Mapping[str, WorkloadOutcome]) -> StrategySummary:
    """One strategy's outcomes summed over its workloads."""
    o = list(outcomes.values())
    return StrategySummary(
        strategy=strategy,
        interruptions=sum(x.interruptions for x in o),
        instance_hours=sum(x.instance_hours for x in o),
        wasted_unit_hours=sum(x.wasted_unit_hours for x in o),
        reclaimable_unit_hours=sum(x.reclaimable_unit_hours for x in o),
        fallback_starts=sum(x.fallback_starts for x in o),
        shortfall_unit_hours=sum(x.shortfall_unit_hours for x in o),
        unit_hours_wanted=sum(x.unit_hours_wanted for x in o),
        counterfactual=sum((x.counterfactual for x in o), Decimal(0)),
        cost=sum((x.cost for x in o), Decimal(0)),
        net_saving=sum((x.net_saving for x in o), Decimal(0)),
        net_saving_planning=sum((x.net_saving_planning for x in o), Decimal(0)),
        depth_premium=sum((x.depth_premium for x in o), Decimal(0)).quantize(Decimal("0.01")),
        worst_step_loss_pct=max((100.0 * x.worst_step_loss_units / x.units for x in o if x.units), default=0.0),
    )


def verdicts(summaries: Sequence[StrategySummary]) -> list[tuple[str, bool, str]]:
    """(target, met, figure) for ours (depth-first, else the first summary) against the one-pager's targets and,
    when they ran on the same trace, against price-first and single-cheapest."""
    if not summaries:
        return []
    by = {s.strategy: s for s in summaries}
    ours = by.get(Strategy.DEPTH_FIRST, summaries[0])
    out = [("shortfall ≤ 0.1 % of capacity-hours", ours.shortfall_pct <= TARGETS["shortfall_pct"],
            f"{ours.shortfall_pct:.3f} %"),
           ("wasted work ≤ 3 % of reclaimable hours", ours.wasted_pct <= TARGETS["wasted_pct"],
            f"{ours.wasted_pct:.2f} %"),
           ("net saving ≥ 55 % (planning rates)", ours.net_planning_pct >= TARGETS["net_pct"],
            f"{ours.net_planning_pct:.1f} % (rate card {ours.net_pct:.1f} %)")]
    for other in (Strategy.PRICE_FIRST, Strategy.SINGLE_CHEAPEST):
        them = by.get(other)
        if them is None or them is ours:
            continue
        out.append((f"interruptions/h below {other}", ours.interruption_rate_pct_h < them.interruption_rate_pct_h,
                    f"{ours.interruption_rate_pct_h:.2f} vs {them.interruption_rate_pct_h:.2f} %/h"))
        out.append((f"worst 5-min loss below {other}", ours.worst_step_loss_pct < them.worst_step_loss_pct,
                    f"{ours.worst_step_loss_pct:.0f} % vs {them.worst_step_loss_pct:.0f} %"))
    return out


def _by(units: Mapping[str, int], pools: Mapping[str, Pool], key: str) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for pid, n in units.items():
        pool = pools.get(pid)
        out[getattr(pool, key) if pool is not None else "?"] += n
    return dict(out)


def _shares(units: Mapping[str, int], whole: int, most: int = 6) -> str:
    top = sorted(units.items(), key=lambda kv: (-kv[1], kv[0]))[:most]
    return ", ".join(f"{k} {n} ({100 * n / whole:.0f} %)" for k, n in top) if whole else "-"


def explain_step(outcome: WorkloadOutcome, pools: Mapping[str, Pool]) -> str:
    """A few lines tracing a workload's worst 5-min step: what it lost by hall, aggregate and pool, against what it
    held there at the pass before (shares of its held reclaimable units, what ADR-06's caps bound: 15 % a pool,
    30 % an aggregate, 40 % a hall), so a loss above the caps shows whether the holding broke them or the loss
    spanned groups."""
    step: StepLoss | None = outcome.worst_step
    if step is None:
        return f"{outcome.workload}: no reclaimable unit lost"
    held = sum(step.held.values())
    lost_pools = step.lost
    lines = [f"{outcome.workload} at {step.at:%Y-%m-%d %H:%M} UTC lost {step.units_lost} units "
             f"({100 * step.units_lost / outcome.units:.0f} % of its claim of {outcome.units}) in "
             f"{len(lost_pools)} pool(s); it held {held} reclaimable units in {len(step.held)} pool(s) before, "
             f"{max(0, held - step.units_lost)} after",
             f"  lost by hall: {_shares(_by(lost_pools, pools, 'hall'), held)}; "
             f"by aggregate: {_shares(_by(lost_pools, pools, 'aggregate'), held)}; "
             f"by pool: {_shares(lost_pools, held, 3)}",
             f"  held by hall: {_shares(_by(step.held, pools, 'hall'), held)}; "
             f"largest aggregates: {_shares(_by(step.held, pools, 'aggregate'), held, 3)}; "
             f"largest pools: {_shares(step.held, held, 3)}"]
    unheld = [f"{p} lost {n}, held {step.held.get(p, 0)}" for p, n in sorted(lost_pools.items())
              if step.held.get(p, 0) < n]
    if unheld:
        lines.append(f"  lost beyond what the pass before held (launched since): {'; '.join(unheld)}")
    return "\n".join(lines)
