"""What every comparison of one strategy's replay prints beside its summary — the bake-off's record
(``sco.bakeoff.month.month_record``) and ``bench.replay_compare`` alike, so the two cannot drift apart: the share of
the shortfall that fell on workloads that wait, the worst workload, where the saving went (whose ``ceiling`` is the
net the floors allow with nothing lost) and each workload against its own contract."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from contracts.schema import Contract, FallbackPolicy
from contracts.verdicts import WorkloadVerdict

from ..planning import Strategy
from ..simregion.economics import PLANNING_RATE_SHARE
from .compare import StrategySummary, summarise, workload_verdicts
from .engine import WorkloadOutcome
from .waterfall import waterfall

__all__ = ["RunFigures", "run_figures"]


@dataclass(frozen=True)
class RunFigures:
    summary: StrategySummary
    shortfall_wait_pct: float   # the share of the shortfall that fell on workloads without fallback (they wait)
    worst_workload: str         # the most short workload, "<name> short x %, y %/h" ("" when nothing was wanted)
    waterfall: dict[str, float]   # points of the wanted work's value (``controllers.replay.waterfall``)
    verdicts: list[WorkloadVerdict]

    @property
    def ceiling_pct(self) -> float:
        """The net saving at the planning rate with nothing lost: floors at no saving, the rest at the planning
        rate's discount."""
        return self.waterfall.get("ceiling", 0.0)

    @property
    def outside(self) -> list[WorkloadVerdict]:
        """The workloads outside their own contract."""
        return [v for v in self.verdicts if not v.passed]


def run_figures(strategy: Strategy, outcomes: Mapping[str, WorkloadOutcome],
                contracts: Sequence[Contract]) -> RunFigures:
    """The figures of one strategy's ``outcomes`` under ``contracts``."""
    waits = {c.workload for c in contracts if c.fallback_policy is FallbackPolicy.NONE}
    short_wait = sum(o.shortfall_s for o in outcomes.values() if o.workload in waits)
    short_all = sum(o.shortfall_s for o in outcomes.values())
    wanted = [o for o in outcomes.values() if o.wanted_s]
    worst = max(wanted, key=lambda o: (o.shortfall_s / o.wanted_s, o.interruptions)) if wanted else None
    return RunFigures(
        summary=summarise(strategy, outcomes),
        shortfall_wait_pct=100.0 * short_wait / short_all if short_all else 0.0,
        worst_workload=(f"{worst.workload} short {100 * worst.shortfall_s / worst.wanted_s:.2f} %, "
                        f"{worst.interruption_rate_pct_h:.2f} %/h") if worst else "",
        waterfall=waterfall(outcomes, {c.workload: c.floor_pct for c in contracts}, PLANNING_RATE_SHARE),
        verdicts=workload_verdicts(outcomes, {c.workload: c for c in contracts}))
