"""Today's hourly ledger in ``Decimal`` (before the polars ledger), kept verbatim as the reference the polars path
(``orchestration.range_frames``, ``orchestration.ledger_frames``) is checked against, like
``tests/controllers/planning/oracle.py`` for the planner: ``oracle_read_range`` is ``backfill.read_range``
(``oracle_range`` its loop over the queries' rows); ``attribute``, ``orchestrator_shares``, ``attribute_hour``
and ``hour_rows`` are copies.
Only the names it imports from the production package are shared: ``Usage``, ``Loss``, ``LedgerLine``, ``q6``,
``load_catalogue``, ``LEDGER_COLUMNS``."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from contracts.cost_attributes import (
    ATTR_DEPTH_PREMIUM,
    ATTR_PURPOSE,
    ATTR_WASTED_S,
    DEFECT_CAUSE_PREFIX,
    FALSE_POSITIVE_CAUSE,
)
from orchestration.attribution import LINES, LedgerLine, Loss, Usage, q6
from orchestration.catalogue import load_catalogue
from orchestration.ledger_inputs import LEDGER_COLUMNS

__all__ = ["OracleHour", "attribute", "attribute_hour", "hour_rows", "oracle_range", "oracle_read_range",
           "orchestrator_shares"]

ZERO = Decimal(0)
HOUR_MS = 3_600_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _ms(t: datetime) -> int:
    return ((t.replace(tzinfo=UTC) if t.tzinfo is None else t) - _EPOCH) // timedelta(milliseconds=1)


@dataclass(frozen=True)
class OracleHour:
    hour: datetime
    usage: list[Usage]
    losses: list[Loss]
    storage_eur: dict[str, Decimal]
    orchestrator_eur: Decimal


def _dec(value: object) -> Decimal:
    try:
        return Decimal(str(value)) if value not in (None, "") else ZERO
    except ArithmeticError:
        return ZERO


def _loss_cause(cause: str) -> str:
    if cause.startswith(DEFECT_CAUSE_PREFIX):
        return "defect"
    return "false-positive" if cause == FALSE_POSITIVE_CAUSE else "reclaim"


def oracle_read_range(ch: Any, region: str, start: datetime, end: datetime, lookback_days: int = 90,
               until: datetime | None = None) -> list[OracleHour]:
    """One ``HourInputs`` per hour in [start, end) (whole hours, UTC).

    ``until`` ends a still-open range early (the demo attributes its own, unfinished hour): instance spans,
    losses and rate cards stop there instead of at ``end``, so instances still running are not charged for
    time that has not happened. Storage and the orchestrator's footprint are per hour and stay whole.
    ``ledger.read_hour`` is the one-hour case."""
    n = int((end - start) // timedelta(hours=1))
    stop = end if until is None else max(start, min(end, until))
    s_ms, stop_ms = _ms(start), _ms(stop)
    p = {"r": region, "h0": start, "h1": stop, "he": end,
         "lb": min(start + timedelta(hours=1), stop) - timedelta(days=lookback_days)}
    pools = {c.pool: c for c in load_catalogue(ch, region)}
    rates: dict[tuple[str, int], tuple[Decimal, Decimal]] = {}
    for pool, h, rate, guaranteed in ch.rows(
            "SELECT pool, toStartOfHour(time) AS h, avg(rate_eur_h), avg(guaranteed_rate_eur_h) FROM rate_cards "
            "WHERE region = {r:String} AND time >= {h0:DateTime64(3)} AND time < {h1:DateTime64(3)} "
            "GROUP BY pool, h", p):
        rates[(str(pool), (_ms(h) - s_ms) // HOUR_MS)] = (Decimal(rate), Decimal(guaranteed))
    acc: dict[tuple[int, str, str, str, Decimal], int] = defaultdict(int)
    for workload, pool, attrs, t0, t1 in ch.rows(
            "SELECT argMinIf(workload, time, kind = 'launched') AS w, argMinIf(pool, time, kind = 'launched'), "
            "argMinIf(attributes, time, kind = 'launched'), minIf(time, kind = 'launched'), "
            "if(countIf(kind = 'terminated') > 0, minIf(time, kind = 'terminated'), {h1:DateTime64(3)}) "
            "FROM events WHERE region = {r:String} AND kind IN ('launched', 'terminated') AND instance != '' "
            "AND time < {h1:DateTime64(3)} AND time >= {lb:DateTime64(3)} "
            "GROUP BY instance HAVING countIf(kind = 'launched') > 0 AND w != ''", p):
        a = json.loads(attrs or "{}")
        key = (str(workload), str(pool), str(a.get(ATTR_PURPOSE) or "work"), _dec(a.get(ATTR_DEPTH_PREMIUM)))
        lo, hi = max(_ms(t0), s_ms), min(_ms(t1), stop_ms)
        for h in range((lo - s_ms) // HOUR_MS, -(-(hi - s_ms) // HOUR_MS)):
            ms = min(hi, s_ms + (h + 1) * HOUR_MS) - max(lo, s_ms + h * HOUR_MS)
            if ms > 0:
                acc[(h, *key)] += ms
    usage: dict[int, list[Usage]] = defaultdict(list)
    for (h, workload, pool, purpose, premium), ms in sorted(acc.items()):
        cat = pools.get(pool)
        if cat is None:
            raise ValueError(f"instance of {workload} ran in pool {pool!r}, which the catalogue does not know; "
                             "refresh the pool_catalogue asset first")
        rate, guaranteed = rates.get((pool, h), (cat.rate_eur_h, cat.guaranteed_rate_eur_h))
        usage[h].append(Usage(workload, pool, cat.purchase_model, purpose, Decimal(ms) / Decimal(HOUR_MS), rate,
                              guaranteed, premium))
    losses: dict[int, list[Loss]] = defaultdict(list)
    for workload, pool, cause, attrs, t in ch.rows(
            "SELECT workload, pool, cause, attributes, time FROM events WHERE region = {r:String} AND workload != '' "
            "AND time >= {h0:DateTime64(3)} AND time < {h1:DateTime64(3)} AND NOT drill "
            f"AND JSONHas(attributes, '{ATTR_WASTED_S}') ORDER BY time", p):
        wasted = _dec(json.loads(attrs).get(ATTR_WASTED_S))
        if wasted == 0:
            continue
        h = (_ms(t) - s_ms) // HOUR_MS
        cat = pools.get(str(pool))
        guaranteed = rates.get((str(pool), h), (ZERO, cat.guaranteed_rate_eur_h if cat else ZERO))[1]
        losses[h].append(Loss(str(workload), str(pool), wasted / Decimal(3600), guaranteed, _loss_cause(str(cause))))
    storage: dict[int, dict[str, Decimal]] = defaultdict(dict)
    for hour, workload, eur in ch.rows(
            "SELECT hour, workload, sum(gib_hours * eur_per_gib_h) FROM storage_usage FINAL "
            "WHERE hour >= {h0:DateTime} AND hour < {he:DateTime} GROUP BY hour, workload", p):
        storage[(_ms(hour) - s_ms) // HOUR_MS][str(workload)] = Decimal(eur)
    orch = {(_ms(hour) - s_ms) // HOUR_MS: Decimal(cost) for hour, cost in ch.rows(
        "SELECT hour, sum(cost_eur) FROM orchestrator_usage FINAL WHERE region = {r:String} "
        "AND hour >= {h0:DateTime} AND hour < {he:DateTime} GROUP BY hour", p)}
    return [OracleHour(start + timedelta(hours=h), usage.get(h, []), losses.get(h, []), storage.get(h, {}),
                       orch.get(h, ZERO)) for h in range(n)]


def oracle_range(start: datetime, n: int, stop: datetime, spans: Iterable[tuple[str, str, str, int, int]],
                 loss_rows: Iterable[tuple[str, str, str, str, int]], pools: Mapping[str, Any],
                 rates: Mapping[tuple[str, int], tuple[Decimal, Decimal]],
                 storage_rows: Sequence[tuple[int, str, Decimal]],
                 orch_rows: Sequence[tuple[int, Decimal]]) -> list[OracleHour]:
    """``read_range``'s Python part on the rows its queries return (times as epoch milliseconds)."""
    s_ms = (start - datetime(1970, 1, 1, tzinfo=start.tzinfo)) // timedelta(milliseconds=1)
    stop_ms = s_ms + (stop - start) // timedelta(milliseconds=1)
    acc: dict[tuple[int, str, str, str, Decimal], int] = defaultdict(int)
    for workload, pool, attrs, t0, t1 in spans:
        a = json.loads(attrs or "{}")
        key = (str(workload), str(pool), str(a.get(ATTR_PURPOSE) or "work"), _dec(a.get(ATTR_DEPTH_PREMIUM)))
        lo, hi = max(t0, s_ms), min(t1, stop_ms)
        for h in range((lo - s_ms) // HOUR_MS, -(-(hi - s_ms) // HOUR_MS)):
            ms = min(hi, s_ms + (h + 1) * HOUR_MS) - max(lo, s_ms + h * HOUR_MS)
            if ms > 0:
                acc[(h, *key)] += ms
    usage: dict[int, list[Usage]] = defaultdict(list)
    for (h, workload, pool, purpose, premium), ms in sorted(acc.items()):
        cat = pools.get(pool)
        if cat is None:
            raise ValueError(f"instance of {workload} ran in pool {pool!r}, which the catalogue does not know; "
                             "refresh the pool_catalogue asset first")
        rate, guaranteed = rates.get((pool, h), (cat.rate_eur_h, cat.guaranteed_rate_eur_h))
        usage[h].append(Usage(workload, pool, cat.purchase_model, purpose, Decimal(ms) / Decimal(HOUR_MS), rate,
                              guaranteed, premium))
    losses: dict[int, list[Loss]] = defaultdict(list)
    for workload, pool, cause, attrs, t in loss_rows:
        wasted = _dec(json.loads(attrs).get(ATTR_WASTED_S))
        if wasted == 0:
            continue
        h = (t - s_ms) // HOUR_MS
        cat = pools.get(str(pool))
        guaranteed = rates.get((str(pool), h), (ZERO, cat.guaranteed_rate_eur_h if cat else ZERO))[1]
        losses[h].append(Loss(str(workload), str(pool), wasted / Decimal(3600), guaranteed, _loss_cause(str(cause))))
    storage: dict[int, dict[str, Decimal]] = defaultdict(dict)
    for h, workload, eur in storage_rows:
        storage[h][workload] = eur
    orch = dict(orch_rows)
    return [OracleHour(start + timedelta(hours=h), usage.get(h, []), losses.get(h, []), storage.get(h, {}),
                       orch.get(h, ZERO)) for h in range(n)]


def attribute(workload: str, period: str, usage: Iterable[Usage], losses: Iterable[Loss] = (),
              storage_eur: Decimal = ZERO, orchestrator_eur: Decimal = ZERO) -> LedgerLine:
    """The ledger line of one workload for one period (an hour, a day, a month: hours are quantities)."""
    spend = dict.fromkeys(LINES, ZERO)
    work_value = useful = inst = gross = premium = reclaim_h = fallback_h = ZERO
    for u in usage:
        if u.workload != workload:
            continue
        cost = u.hours * u.rate_eur_h
        spend[u.line] += cost
        inst += u.hours
        premium += u.hours * u.depth_premium_eur_h
        if u.purpose != "headroom":
            useful += u.hours
            work_value += u.hours * u.guaranteed_rate_eur_h
        if u.line == "reclaimable_eur":
            gross += u.hours * (u.guaranteed_rate_eur_h - u.rate_eur_h)
            reclaim_h += u.hours
        if u.line == "fallback_eur":
            fallback_h += u.hours
    wasted_h = wasted_eur = defect_h = defect_eur = fp_h = fp_eur = ZERO
    for loss in losses:
        if loss.workload != workload:
            continue
        value = loss.hours * loss.guaranteed_rate_eur_h
        if loss.cause == "defect":
            defect_h += loss.hours
            defect_eur += value
        else:
            wasted_h += loss.hours
            wasted_eur += value
            if loss.cause == "false-positive":
                fp_h += loss.hours
                fp_eur += value
    spend["storage_eur"] = storage_eur
    spend["orchestrator_eur"] = orchestrator_eur
    spend = {k: q6(v) for k, v in spend.items()}
    counterfactual = q6(work_value - wasted_eur)
    costs = sum(spend.values(), ZERO)
    return LedgerLine(
        workload=workload, period=period, instance_hours=q6(inst), useful_hours=q6(useful - wasted_h),
        counterfactual_eur=counterfactual, gross_saving_eur=q6(gross), reclaimable_eur=spend["reclaimable_eur"],
        floor_eur=spend["floor_eur"], fallback_eur=spend["fallback_eur"], headroom_eur=spend["headroom_eur"],
        storage_eur=spend["storage_eur"], orchestrator_eur=spend["orchestrator_eur"], costs_eur=costs,
        net_saving_eur=counterfactual - costs, wasted_hours=q6(wasted_h), wasted_eur=q6(wasted_eur),
        defect_wasted_hours=q6(defect_h), defect_wasted_eur=q6(defect_eur), depth_premium_eur=q6(premium),
        reclaimable_hours=q6(reclaim_h), fallback_hours=q6(fallback_h), false_positive_hours=q6(fp_h),
        false_positive_eur=q6(fp_eur))


def orchestrator_shares(total_eur: Decimal, instance_hours: Mapping[str, Decimal]) -> dict[str, Decimal]:
    """Split the orchestrator's cost for a period pro rata to instance-hours; shares add up to the total
    exactly (the rounding remainder goes to the largest consumer)."""
    total_h = sum(instance_hours.values(), ZERO)
    if total_h <= 0 or total_eur == 0:
        return dict.fromkeys(instance_hours, ZERO)
    shares = {w: q6(total_eur * h / total_h) for w, h in instance_hours.items()}
    remainder = q6(total_eur) - sum(shares.values(), ZERO)
    if remainder:
        biggest = max(instance_hours, key=lambda w: (instance_hours[w], w))
        shares[biggest] += remainder
    return shares


def attribute_hour(inputs: OracleHour) -> list[LedgerLine]:
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



def hour_rows(region: str, inputs: OracleHour,
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
    return ledger_rows, out
