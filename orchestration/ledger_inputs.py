"""One hour's ledger inputs and the ``Decimal`` ledger: ``HourInputs`` (the ``Usage``/``Loss`` objects of an hour,
with the frames it was read from), the table columns, and the ledger lines and ``cost_attribution`` rows computed
in ``Decimal`` by ``attribution.attribute`` — the reference the polars frames (``ledger_frames``) fall back to on
a rounding tie; ``hour_inputs`` turns read frames back into ``HourInputs``. Sits below ``ledger_frames``,
``backfill`` and ``ledger``, which build on it."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from .attribution import LedgerLine, Loss, Usage, attribute, net_saving, orchestrator_shares, q6

if TYPE_CHECKING:
    from .range_frames import RangeFrames

__all__ = ["COST_COLUMNS", "LEDGER_COLUMNS", "HourInputs", "decimal_cost_rows", "decimal_lines", "hour_inputs"]

ZERO = Decimal(0)
LEDGER_COLUMNS = ("hour", "workload", "instance_hours", "useful_hours", "counterfactual_eur", "gross_saving_eur",
                  "reclaimable_eur", "floor_eur", "fallback_eur", "headroom_eur", "storage_eur", "orchestrator_eur",
                  "costs_eur", "net_saving_eur", "wasted_hours", "wasted_eur", "defect_wasted_hours",
                  "defect_wasted_eur", "depth_premium_eur", "reclaimable_hours", "fallback_hours",
                  "false_positive_hours", "false_positive_eur", "label")


@dataclass(frozen=True)
class HourInputs:
    hour: datetime
    usage: list[Usage]
    losses: list[Loss]
    storage_eur: dict[str, Decimal]
    orchestrator_eur: Decimal
    frames: RangeFrames | None = field(default=None, compare=False, repr=False)  # the hour as read, exact


def decimal_lines(inputs: HourInputs) -> list[LedgerLine]:
    """``attribute_hour`` on the ``Usage``/``Loss`` objects, in ``Decimal``."""
    workloads = sorted({u.workload for u in inputs.usage} | {lo.workload for lo in inputs.losses}
                       | set(inputs.storage_eur))
    usage: dict[str, list[Usage]] = defaultdict(list)
    losses: dict[str, list[Loss]] = defaultdict(list)
    for u in inputs.usage:
        usage[u.workload].append(u)
    for lo in inputs.losses:
        losses[lo.workload].append(lo)
    hours = {w: sum((u.hours for u in usage[w]), ZERO) for w in workloads}
    shares = orchestrator_shares(inputs.orchestrator_eur, hours)
    period = inputs.hour.strftime("%Y-%m-%dT%H:00Z")
    return [attribute(w, period, usage[w], losses[w], storage_eur=inputs.storage_eur.get(w, ZERO),
                      orchestrator_eur=shares.get(w, ZERO)) for w in workloads]


COST_COLUMNS = ("hour", "region", "workload", "pool", "purchase_model", "instance_hours", "units_hours", "cost_eur",
                "counterfactual_eur", "saving_eur", "wasted_work_eur", "attributes")


def decimal_cost_rows(region: str, inputs: HourInputs) -> list[tuple[object, ...]]:
    """The ``cost_attribution`` rows of one hour from its ``Usage``/``Loss`` objects, in ``Decimal``."""
    hour = inputs.hour.replace(tzinfo=None)
    # per pool × purchase model, with the cost lines in the attributes (dbt's fct_savings_ledger rolls these up)
    rows: dict[tuple[str, str, str], dict[str, Decimal]] = defaultdict(lambda: defaultdict(lambda: ZERO))
    for u in inputs.usage:
        r = rows[(u.workload, u.pool, u.purchase_model)]
        r["instance_hours"] += u.hours
        r["cost_eur"] += u.hours * u.rate_eur_h
        r[u.line] += u.hours * u.rate_eur_h
        r["depth_premium_eur"] += u.hours * u.depth_premium_eur_h
        if u.purpose != "headroom":
            r["useful_value_eur"] += u.hours * u.guaranteed_rate_eur_h
        if u.line == "reclaimable_eur":
            r["gross_saving_eur"] += u.hours * (u.guaranteed_rate_eur_h - u.rate_eur_h)
    models = {(u.workload, u.pool): u.purchase_model for u in inputs.usage}
    for lo in inputs.losses:
        r = rows[(lo.workload, lo.pool, models.get((lo.workload, lo.pool), "reclaimable"))]
        r["defect_wasted_eur" if lo.cause == "defect" else "wasted_eur"] += lo.hours * lo.guaranteed_rate_eur_h
        r["defect_wasted_hours" if lo.cause == "defect" else "wasted_hours"] += lo.hours
        if lo.cause == "false-positive":
            r["false_positive_eur"] += lo.hours * lo.guaranteed_rate_eur_h
            r["false_positive_hours"] += lo.hours
    out: list[tuple[object, ...]] = []
    for (workload, pool, model), r in sorted(rows.items()):
        counterfactual = q6(r["useful_value_eur"] - r["wasted_eur"])
        cost = q6(r["cost_eur"])
        out.append((hour, region, workload, pool, model, float(r["instance_hours"]), float(r["instance_hours"]), cost,
                    counterfactual, net_saving(counterfactual, cost), q6(r["wasted_eur"]),
                    json.dumps({k: str(q6(v)) for k, v in sorted(r.items())})))
    return out


def hour_inputs(frames: RangeFrames) -> list[HourInputs]:
    """One ``HourInputs`` per hour, with today's ``Usage`` and ``Loss`` objects in today's order."""
    from .range_frames import HOUR_MS  # polars loads with the frames, not with the columns

    usage: dict[int, list[Usage]] = {}
    for h, workload, pool, model, purpose, premium, span_ms, rate, guar in frames.usage.iter_rows():
        usage.setdefault(h, []).append(Usage(workload, pool, model, purpose, Decimal(span_ms) / Decimal(HOUR_MS),
                                             Decimal(rate), Decimal(guar), Decimal(premium)))
    for rows in usage.values():
        rows.sort(key=lambda u: (u.workload, u.pool, u.purpose, u.depth_premium_eur_h))
    losses: dict[int, list[Loss]] = {}
    for h, _, workload, pool, cause, wasted, guar in frames.losses.sort("seq").iter_rows():
        losses.setdefault(h, []).append(Loss(workload, pool, Decimal(wasted) / Decimal(3600), Decimal(guar), cause))
    storage: dict[int, dict[str, Decimal]] = {}
    for h, workload, eur in frames.storage.iter_rows():
        storage.setdefault(h, {})[workload] = Decimal(eur)
    orch = {h: Decimal(eur) for h, eur in frames.orch.iter_rows()}
    return [HourInputs(frames.start + timedelta(hours=h), usage.get(h, []), losses.get(h, []), storage.get(h, {}),
                       orch.get(h, ZERO), frames.hour(h) if frames.n > 1 else frames) for h in range(frames.n)]
