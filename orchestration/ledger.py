"""Hourly savings attribution (ADR-26): instance-hours, losses, storage and the orchestrator's footprint for
one hour, read from ClickHouse, turned into ledger lines by ``attribution.attribute`` and written back
(``savings_ledger`` per workload × hour, ``cost_attribution`` per workload × pool × purchase model)."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from contracts.cost_attributes import ATTR_DEPTH_PREMIUM, ATTR_PURPOSE, ATTR_WASTED_S, DEFECT_CAUSE_PREFIX

from .attribution import LedgerLine, Loss, Usage, attribute, orchestrator_shares, q6
from .catalogue import load_catalogue
from .store import ClickHouse

__all__ = ["COST_COLUMNS", "LEDGER_COLUMNS", "HourInputs", "attribute_hour", "hour_rows", "read_hour", "write_hour"]

ZERO = Decimal(0)
LEDGER_COLUMNS = ("hour", "workload", "instance_hours", "useful_hours", "counterfactual_eur", "gross_saving_eur",
                  "reclaimable_eur", "floor_eur", "fallback_eur", "headroom_eur", "storage_eur", "orchestrator_eur",
                  "costs_eur", "net_saving_eur", "wasted_hours", "wasted_eur", "defect_wasted_hours",
                  "defect_wasted_eur", "depth_premium_eur", "reclaimable_hours", "fallback_hours", "label")


@dataclass(frozen=True)
class HourInputs:
    hour: datetime
    usage: list[Usage]
    losses: list[Loss]
    storage_eur: dict[str, Decimal]
    orchestrator_eur: Decimal


def _dec(value: object, default: Decimal = ZERO) -> Decimal:
    try:
        return Decimal(str(value)) if value not in (None, "") else default
    except ArithmeticError:
        return default


def read_hour(ch: ClickHouse, region: str, hour: datetime, lookback_days: int = 90,
              until: datetime | None = None) -> HourInputs:
    """One hour's inputs. ``until`` ends a still-open hour early (the demo attributes its own, unfinished
    hour): instance spans, losses and rate cards stop there instead of at the end of the hour, so instances
    still running are not charged for time that has not happened. None (the hourly asset): the whole hour."""
    h0, h1 = hour, hour + timedelta(hours=1)
    if until is not None:
        h1 = max(h0, min(h1, until))
    p = {"r": region, "h0": h0, "h1": h1, "lb": h1 - timedelta(days=lookback_days)}
    pools = {c.pool: c for c in load_catalogue(ch, region)}
    rates = {str(r[0]): (Decimal(r[1]), Decimal(r[2])) for r in ch.rows(
        "SELECT pool, avg(rate_eur_h), avg(guaranteed_rate_eur_h) FROM rate_cards WHERE region = {r:String} "
        "AND time >= {h0:DateTime64(3)} AND time < {h1:DateTime64(3)} GROUP BY pool", p)}
    spans = ch.rows(
        "SELECT instance, argMinIf(workload, time, kind = 'launched') AS w, argMinIf(pool, time, kind = 'launched'), "
        "argMinIf(attributes, time, kind = 'launched'), "
        "dateDiff('millisecond', greatest(minIf(time, kind = 'launched'), {h0:DateTime64(3)}), "
        "  if(countIf(kind = 'terminated') > 0, least(minIf(time, kind = 'terminated'), {h1:DateTime64(3)}), "
        "     {h1:DateTime64(3)})) AS ms "
        "FROM events WHERE region = {r:String} AND kind IN ('launched', 'terminated') AND instance != '' "
        "AND time < {h1:DateTime64(3)} AND time >= {lb:DateTime64(3)} "
        "GROUP BY instance HAVING countIf(kind = 'launched') > 0 AND w != '' AND ms > 0", p)
    acc: dict[tuple[str, str, str, Decimal], Decimal] = defaultdict(lambda: ZERO)
    for _, workload, pool, attrs, ms in spans:
        a = json.loads(attrs or "{}")
        key = (str(workload), str(pool), str(a.get(ATTR_PURPOSE) or "work"), _dec(a.get(ATTR_DEPTH_PREMIUM)))
        acc[key] += Decimal(int(ms)) / Decimal(3_600_000)
    usage = []
    for (workload, pool, purpose, premium), hours in sorted(acc.items()):
        cat = pools.get(pool)
        if cat is None:
            raise ValueError(f"instance of {workload} ran in pool {pool!r}, which the catalogue does not know; "
                             "refresh the pool_catalogue asset first")
        rate, guaranteed = rates.get(pool, (cat.rate_eur_h, cat.guaranteed_rate_eur_h))
        usage.append(Usage(workload, pool, cat.purchase_model, purpose, hours, rate, guaranteed, premium))
    losses = []
    for workload, pool, cause, attrs in ch.rows(
            "SELECT workload, pool, cause, attributes FROM events WHERE region = {r:String} AND workload != '' "
            "AND time >= {h0:DateTime64(3)} AND time < {h1:DateTime64(3)} AND NOT drill "
            f"AND JSONHas(attributes, '{ATTR_WASTED_S}')", p):
        wasted = _dec(json.loads(attrs).get(ATTR_WASTED_S))
        if wasted == 0:
            continue
        cat = pools.get(str(pool))
        guaranteed = rates.get(str(pool), (ZERO, cat.guaranteed_rate_eur_h if cat else ZERO))[1]
        losses.append(Loss(str(workload), str(pool), wasted / Decimal(3600), guaranteed,
                           "defect" if str(cause).startswith(DEFECT_CAUSE_PREFIX) else "reclaim"))
    storage = {str(w): Decimal(e) for w, e in ch.rows(
        "SELECT workload, sum(gib_hours * eur_per_gib_h) FROM storage_usage FINAL WHERE hour = {h0:DateTime} "
        "GROUP BY workload", p)}
    orch = ch.rows("SELECT sum(cost_eur) FROM orchestrator_usage FINAL WHERE region = {r:String} "
                   "AND hour = {h0:DateTime}", p)
    return HourInputs(hour, usage, losses, storage, Decimal(orch[0][0]) if orch and orch[0][0] is not None else ZERO)


def attribute_hour(inputs: HourInputs) -> list[LedgerLine]:
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
    out: list[tuple[object, ...]] = []
    for (workload, pool, model), r in sorted(rows.items()):
        counterfactual = q6(r["useful_value_eur"] - r["wasted_eur"])
        cost = q6(r["cost_eur"])
        out.append((hour, region, workload, pool, model, float(r["instance_hours"]), float(r["instance_hours"]), cost,
                    counterfactual, counterfactual - cost, q6(r["wasted_eur"]),
                    json.dumps({k: str(q6(v)) for k, v in sorted(r.items())})))
    return ledger_rows, out
