"""Hourly savings attribution (ADR-26): instance-hours, losses, storage and the orchestrator's footprint for
one hour, read from ClickHouse, turned into ledger lines and written back (``savings_ledger`` per workload × hour,
``cost_attribution`` per workload × pool × purchase model).

Inputs read from ClickHouse carry their polars frames (``range_frames``) and are attributed on them
(``ledger_frames``, exact integers); inputs built by hand, and an hour with an exact rounding tie, go through
``attribution.attribute`` on ``Decimal`` (``decimal_lines``, ``decimal_cost_rows``) — the same figures."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from .attribution import LedgerLine, Loss, Usage, attribute, orchestrator_shares, q6
from .store import ClickHouse

if TYPE_CHECKING:
    from .range_frames import ArrowClickHouse, RangeFrames

__all__ = ["COST_COLUMNS", "LEDGER_COLUMNS", "HourInputs", "attribute_hour", "decimal_cost_rows", "decimal_lines",
           "hour_rows", "read_hour", "write_hour"]

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


def read_hour(ch: ArrowClickHouse, region: str, hour: datetime, lookback_days: int = 90,
              until: datetime | None = None) -> HourInputs:
    """One hour's inputs: ``backfill.read_range`` over [hour, hour + 1 h). ``until`` ends a still-open hour
    early (the demo attributes its own, unfinished hour); None (the hourly asset): the whole hour."""
    from .backfill import read_range  # backfill builds on this module's HourInputs and attribute_hour

    return read_range(ch, region, hour, hour + timedelta(hours=1), lookback_days, until)[0]


def attribute_hour(inputs: HourInputs) -> list[LedgerLine]:
    """The hour's ledger lines, one per workload (sorted)."""
    if inputs.frames is not None:
        from .ledger_frames import attribute_frames

        return attribute_frames(inputs.frames, "").lines[0]
    return decimal_lines(inputs)


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


def write_hour(ch: ClickHouse, region: str, inputs: HourInputs, lines: list[LedgerLine]) -> None:
    ledger_rows, cost_rows = hour_rows(region, inputs, lines)
    ch.insert("savings_ledger", ledger_rows, LEDGER_COLUMNS)
    ch.insert("cost_attribution", cost_rows, COST_COLUMNS)


def hour_rows(region: str, inputs: HourInputs,
              lines: list[LedgerLine]) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """The ``savings_ledger`` and ``cost_attribution`` rows of one attributed hour."""
    hour = inputs.hour.replace(tzinfo=None)
    ledger_rows = [(hour, *(getattr(ln, c) for c in LEDGER_COLUMNS[1:])) for ln in lines]
    if inputs.frames is not None:
        from .ledger_frames import attribute_frames

        return ledger_rows, attribute_frames(inputs.frames, region).cost_rows
    return ledger_rows, decimal_cost_rows(region, inputs)


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
                    counterfactual, counterfactual - cost, q6(r["wasted_eur"]),
                    json.dumps({k: str(q6(v)) for k, v in sorted(r.items())})))
    return out
