"""Per-workload verdicts: a workload's realised interruptions and wasted work against its own contract (ADR-01).

A workload passes when it was interrupted no faster than its declared tolerance (``max_interruption_rate_pct_h``,
reclaims per 100 instance-hours) and wasted no more than its budget of its reclaimable hours (ADR-20's 3 %: the
compiler holds each contract's checkpoint interval or unit length to it). A failing verdict carries its cause,
computed from the figures it was judged on, so that a reader sees whether the contract was breached by the
placement (a rate well above the tolerance over many instance-hours) or by arithmetic on little exposure (one
reclaim of a two-unit claim over a few instance-hours).

The same rule for the replay's figures (``sco simulate``, ``bench.replay_compare``) and the ledger's (the showback
page). Standard library only; pure.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["WASTED_BUDGET_PCT", "WorkloadVerdict", "verdict"]

WASTED_BUDGET_PCT = 3.0  # ADR-20 / the one-pager: wasted work ≤ 3 % of reclaimable hours


@dataclass(frozen=True)
class WorkloadVerdict:
    """One workload judged against its contract."""

    workload: str
    rate_pct_h: float
    tolerance_pct_h: float
    wasted_pct: float
    wasted_budget_pct: float
    interruptions: int
    instance_hours: float
    cause: str = ""

    @property
    def within_tolerance(self) -> bool:
        """Interrupted no faster than declared."""
        return self.rate_pct_h <= self.tolerance_pct_h

    @property
    def within_budget(self) -> bool:
        """Wasted no more than the budget."""
        return self.wasted_pct <= self.wasted_budget_pct

    @property
    def passed(self) -> bool:
        """Both."""
        return self.within_tolerance and self.within_budget

    def line(self) -> str:
        """``PASS  name: 1.20 %/h ≤ 5 %/h declared; wasted 0.40 % ≤ 3 %`` (and the cause on a FAIL)."""
        rate = "≤" if self.within_tolerance else ">"
        waste = "≤" if self.within_budget else ">"
        text = (f"{'PASS' if self.passed else 'FAIL'}  {self.workload}: interrupted {self.rate_pct_h:.2f} %/h "
                f"{rate} {self.tolerance_pct_h:g} %/h declared; wasted {self.wasted_pct:.2f} % {waste} "
                f"{self.wasted_budget_pct:g} % of its reclaimable hours")
        return text + (f"\n      cause: {self.cause}" if self.cause else "")


def verdict(workload: str, *, interruptions: int, instance_hours: float, tolerance_pct_h: float,
            wasted_pct: float, wasted_budget_pct: float = WASTED_BUDGET_PCT, no_notice: int = 0,
            worst_step_units: int = 0, claim_units: int = 0) -> WorkloadVerdict:
    """The verdict of one workload from its realised figures; the cause is computed when it fails."""
    rate = 100.0 * interruptions / instance_hours if instance_hours > 0 else 0.0
    v = WorkloadVerdict(workload, rate, tolerance_pct_h, wasted_pct, wasted_budget_pct, interruptions,
                        instance_hours)
    causes = []
    if not v.within_tolerance:
        allowed = tolerance_pct_h * instance_hours / 100.0
        one = 100.0 / instance_hours if instance_hours > 0 else float("inf")
        text = (f"{interruptions} reclaim(s) over {instance_hours:,.1f} instance-hours where the tolerance allows "
                f"{allowed:.1f}")
        if one > tolerance_pct_h:
            text += f"; a single reclaim on this little exposure is already {one:.1f} %/h (too few hours to judge)"
        if no_notice:
            text += f"; {no_notice} without notice"
        if worst_step_units and claim_units:
            text += (f"; its worst 5-min step took {worst_step_units} of its {claim_units} units "
                     f"({100.0 * worst_step_units / claim_units:.0f} %: a correlated wave, not a drip)")
        causes.append(text)
    if not v.within_budget:
        causes.append(f"wasted {wasted_pct:.2f} % of its reclaimable hours, {wasted_pct / wasted_budget_pct:.1f}× "
                      "the budget: work lost since the last checkpoint on reclaims"
                      + (f", {no_notice} of them without notice (no final write)" if no_notice else ""))
    return v if not causes else WorkloadVerdict(**{**v.__dict__, "cause": "; ".join(causes)})
