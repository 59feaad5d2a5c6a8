"""What the demo's compressed reclaim rate does to its figures, computed rather than asserted.

The demo reclaims at ~150 %/h so that a few minutes hold many reclaims; production runs at ~4 %/h (the
simulated region's default, DESIGN §5). Wasted work is (reclaims per instance-hour) × (work lost per reclaim),
so the demo's measured share is not the production share. Two estimates of the share at the production rate:

- **linear**: the measured share × production rate ÷ demo rate. The demo's units are minutes old when they are
  reclaimed, so they lose little per reclaim; at 4 %/h units run their full length, and the linear figure is
  a *lower* bound.
- **contracts**: ADR-20's planning rule per workload from its signed agent-bundle entry (the fields the agent
  measures ``wasted_s`` with, ``agent/drain/waste.py``): a requeued unit loses half its length per reclaim
  (``contracts.checkpoint_math.requeue_waste_pct``); a periodic checkpoint without a final write loses half an
  interval; a final write on notice loses half an interval only on the reclaims without notice; a stateless
  unit loses nothing. Each workload weighs equally (the demo claims the same units for each).

The net saving carries the same rate: at 150 %/h every workload's measured interruption rate breaches the
tolerance its contract declares for production, so the fallback arbiter starts guaranteed capacity on
"interruption-rate breach" (ADR-23) — a cost a production rate would not incur. ``net_without_breach_fallback``
takes that share of the ledger's fallback out and prices its hours as reclaimable instead.

``net_at_rate`` is the production figure the verdict is on: the ledger's identity over this run's hours with
what the rate changes recomputed from the run's own figures, not the compressed net scaled: the wasted work
by the contracts' rules at the production rate, and the fallback that only the compressed rate's breaches
started (workloads whose declared tolerance is at least the production rate) not started.

Pure: no I/O beyond reading the agent bundles given.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from agent.drain.waste import FINAL_MODES, MODE_NONE, REQUEUE_FRAMEWORK
from contracts.agent_record import AgentRecord
from contracts.checkpoint_math import requeue_waste_pct

__all__ = ["BREACH", "NetAtRate", "WasteAtRate", "agent_records", "breach_share", "breach_share_at_rate",
           "contract_waste_pct", "net_at_rate", "net_without_breach_fallback", "waste_at_rate"]

BREACH = "interruption-rate breach"  # the fallback arbiter's cause (controllers/controller/fallback.py)



@dataclass(frozen=True)
class WasteAtRate:
    """The measured wasted-work share and its estimates at the production rate, in % of reclaimable hours."""

    measured_pct: float
    demo_rate_pct_h: float
    production_rate_pct_h: float
    linear_pct: float       # measured × production ÷ demo rate (a lower bound, see the module docstring)
    contracts_pct: float    # ADR-20's planning rule over the demo's contracts at the production rate

    def text(self) -> str:
        """The measured cell's addition: both estimates at the production rate."""
        rate = f"{self.production_rate_pct_h:g} %/h"
        return (f"at {rate}: {self.linear_pct:.2f} % scaled linearly (a lower bound), "
                f"{self.contracts_pct:.2f} % by the contracts' checkpoint rules")


def contract_waste_pct(record: AgentRecord, rate_pct_h: float, no_notice_share: float) -> float:
    """Expected wasted work of one workload at ``rate_pct_h``, in % of its reclaimable hours (ADR-20)."""
    rate = Decimal(str(rate_pct_h))
    length = record.max_unit_length_min
    interval = record.checkpoint_interval_min
    if record.framework == REQUEUE_FRAMEWORK or (record.checkpoint_mode == MODE_NONE and length is not None):
        return requeue_waste_pct(rate, length) if length is not None else 0.0
    if record.checkpoint_mode == MODE_NONE:
        return 0.0  # stateless
    per_interval = requeue_waste_pct(rate, interval) if interval else 0.0
    if record.checkpoint_mode in FINAL_MODES:
        return no_notice_share * per_interval  # only a reclaim without notice skips the final write
    return per_interval


def agent_records(bundles: Iterable[Path]) -> list[AgentRecord]:
    """Every workload entry of the given ``agent-bundle.json`` files."""
    records = []
    for path in bundles:
        for ref, entry in json.loads(path.read_text())["workloads"].items():
            records.append(AgentRecord.from_entry(ref, entry))
    return records


def waste_at_rate(measured_pct: float, demo_rate_pct_h: float, production_rate_pct_h: float,
                  records: Sequence[AgentRecord], no_notice_share: float = 0.02) -> WasteAtRate:
    """The measured share beside its two estimates at ``production_rate_pct_h``."""
    linear = measured_pct * production_rate_pct_h / demo_rate_pct_h if demo_rate_pct_h > 0 else float("nan")
    per = [contract_waste_pct(r, production_rate_pct_h, no_notice_share) for r in records]
    return WasteAtRate(measured_pct, demo_rate_pct_h, production_rate_pct_h, linear,
                       sum(per) / len(per) if per else float("nan"))


def breach_share(fallback_starts: Sequence[Mapping[str, Any]]) -> float:
    """The share of the fallback instances started (``fallback-started`` events) whose cause was a breach of
    the declared interruption rate."""
    def instances(e: Mapping[str, Any]) -> int:
        return int((e.get("attributes") or {}).get("instances") or 0)

    total = sum(instances(e) for e in fallback_starts)
    return sum(instances(e) for e in fallback_starts if e.get("cause") == BREACH) / total if total else 0.0


def net_without_breach_fallback(money: Mapping[str, float], share: float) -> float | None:
    """Net saving in % of the counterfactual with ``share`` of the fallback cost taken out and its hours priced
    at the run's mean reclaimable rate; None without the ledger's figures."""
    cf, net = money.get("counterfactual_eur"), money.get("net_eur")
    if not cf or net is None or not money.get("reclaimable_hours"):
        return None
    rate = money.get("reclaimable_eur", 0.0) / money["reclaimable_hours"]
    moved = share * money.get("fallback_eur", 0.0) - share * money.get("fallback_hours", 0.0) * rate
    return 100 * (net + moved) / cf


# the ledger's cost lines (orchestration/attribution.py: net = counterfactual − their sum), as the cause names them
COST_LINES = {"reclaimable_eur": "reclaimable spend", "floor_eur": "the guaranteed floor",
              "fallback_eur": "guaranteed fallback", "headroom_eur": "headroom", "storage_eur": "checkpoint storage",
              "orchestrator_eur": "the orchestrator"}
NET_TARGET_PCT = 55.0


@dataclass(frozen=True)
class NetAtRate:
    """The run's net saving recomputed at the production reclaim rate, line by line (``net_at_rate``)."""

    pct: float
    production_rate_pct_h: float
    wasted_pct: float                 # of the reclaimable hours, by the contracts' rules at that rate
    breach_fallback_out: float        # share of the fallback instances that rate would not have started
    lines_pct: dict[str, float]       # each cost line in % of the counterfactual at that rate

    @property
    def passed(self) -> bool:
        """True when the net saving at the production rate reaches the target (``NET_TARGET_PCT``)."""
        return self.pct >= NET_TARGET_PCT

    def cause(self) -> str:
        """What holds the figure below the target: the cost lines, biggest first, in % of the counterfactual
        (the rate card's own discount is what is left when reclaimable spend is the biggest)."""
        ranked = sorted(self.lines_pct.items(), key=lambda kv: -kv[1])
        shown = ", ".join(f"{COST_LINES[k]} {v:.1f} %" for k, v in ranked[:3] if v > 0)
        return f"costs in % of the counterfactual: {shown}; wasted work {self.wasted_pct:.2f} % of reclaimable hours"

    def text(self) -> str:
        """The summary's sentence for the figure: how it was computed and, below the target, what holds it there."""
        rate = f"{self.production_rate_pct_h:g} %/h"
        out = (f"{self.pct:.1f} % at {rate}, computed from this run's hours: wasted work by the contracts' rules "
               f"({self.wasted_pct:.2f} %), {100 * self.breach_fallback_out:.0f} % of the fallback instances not "
               "started (their contracts tolerate that rate)")
        return out if self.passed else f"{out}; below {NET_TARGET_PCT:g} % because {self.cause()}"


def breach_share_at_rate(fallback_starts: Sequence[Mapping[str, Any]], tolerances: Mapping[str, float],
                         rate_pct_h: float) -> float:
    """The share of the fallback instances started on an interruption-rate breach by workloads whose declared
    tolerance (``max_interruption_rate_pct_h``) is at least ``rate_pct_h``: at that rate they would not breach."""
    def instances(e: Mapping[str, Any]) -> int:
        return int((e.get("attributes") or {}).get("instances") or 0)

    total = sum(instances(e) for e in fallback_starts)
    spared = sum(instances(e) for e in fallback_starts
                 if e.get("cause") == BREACH and tolerances.get(str(e.get("workload")), 0.0) >= rate_pct_h)
    return spared / total if total else 0.0


def net_at_rate(ledger: Mapping[str, float], wasted_pct: float, breach_out: float,
                rate_pct_h: float) -> NetAtRate | None:
    """The ledger identity (net = value of the useful work − cost lines) over this run's hours, with what the rate
    changes recomputed rather than scaled: the wasted work is ``wasted_pct`` of the reclaimable hours (the
    contracts' rules at that rate) valued at the run's mean guaranteed rate, and ``breach_out`` of the fallback
    is not started, its hours priced at the run's mean reclaimable rate. None without the ledger's figures."""
    need = ("counterfactual_eur", "wasted_eur", "useful_hours", "wasted_hours", "reclaimable_hours", *COST_LINES)
    if any(ledger.get(k) is None for k in need) or not ledger["reclaimable_hours"]:
        return None
    work_value = ledger["counterfactual_eur"] + ledger["wasted_eur"]   # the useful work before any was lost
    worked_h = ledger["useful_hours"] + ledger["wasted_hours"]
    if work_value <= 0 or worked_h <= 0:
        return None
    wasted_eur = wasted_pct / 100 * ledger["reclaimable_hours"] * work_value / worked_h
    counterfactual = work_value - wasted_eur
    lines = {k: float(ledger[k]) for k in COST_LINES}
    reclaimable_rate = lines["reclaimable_eur"] / ledger["reclaimable_hours"]
    lines["reclaimable_eur"] += breach_out * float(ledger.get("fallback_hours") or 0.0) * reclaimable_rate
    lines["fallback_eur"] *= 1 - breach_out
    net = counterfactual - sum(lines.values())
    return NetAtRate(100 * net / counterfactual, rate_pct_h, wasted_pct, breach_out,
                     {k: 100 * v / counterfactual for k, v in lines.items()})
