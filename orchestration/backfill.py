"""Attribution over a range of hours in one pass (a backfill, or a partition range run as one run): each
input is read once for the whole range and split into hours here, then every hour is attributed exactly as
``ledger.attribute_hour`` does and all rows are written in two inserts. One reader, one loss query, one
decoding: ``ledger.read_hour`` is this reader over one hour."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from contracts.cost_attributes import (
    ATTR_DEPTH_PREMIUM,
    ATTR_PURPOSE,
    ATTR_WASTED_S,
    DEFECT_CAUSE_PREFIX,
    FALSE_POSITIVE_CAUSE,
)

from .attribution import LedgerLine, Loss, Usage
from .catalogue import load_catalogue
from .ledger import COST_COLUMNS, LEDGER_COLUMNS, HourInputs, attribute_hour, hour_rows
from .store import ClickHouse

__all__ = ["attribute_range", "read_range"]

ZERO = Decimal(0)
HOUR_MS = 3_600_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _ms(t: datetime) -> int:
    return ((t.replace(tzinfo=UTC) if t.tzinfo is None else t) - _EPOCH) // timedelta(milliseconds=1)


def _dec(value: object) -> Decimal:
    try:
        return Decimal(str(value)) if value not in (None, "") else ZERO
    except ArithmeticError:
        return ZERO


def _loss_cause(cause: str) -> str:
    """The ledger's loss cause of an event's ``cause``: defect, false-positive (ADR-16) or reclaim."""
    if cause.startswith(DEFECT_CAUSE_PREFIX):
        return "defect"
    return "false-positive" if cause == FALSE_POSITIVE_CAUSE else "reclaim"


def read_range(ch: ClickHouse, region: str, start: datetime, end: datetime, lookback_days: int = 90,
               until: datetime | None = None) -> list[HourInputs]:
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
    return [HourInputs(start + timedelta(hours=h), usage.get(h, []), losses.get(h, []), storage.get(h, {}),
                       orch.get(h, ZERO)) for h in range(n)]


def attribute_range(ch: ClickHouse, region: str, start: datetime, end: datetime) -> list[LedgerLine]:
    """Read, attribute and write every hour of [start, end); returns the ledger lines."""
    ledger_rows: list[tuple[object, ...]] = []
    cost_rows: list[tuple[object, ...]] = []
    lines: list[LedgerLine] = []
    for inputs in read_range(ch, region, start, end):
        hour_lines = attribute_hour(inputs)
        a, b = hour_rows(region, inputs, hour_lines)
        ledger_rows += a
        cost_rows += b
        lines += hour_lines
    ch.insert("savings_ledger", ledger_rows, LEDGER_COLUMNS)
    ch.insert("cost_attribution", cost_rows, COST_COLUMNS)
    return lines
