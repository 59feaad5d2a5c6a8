"""What the reports read: the dbt marts and the analytics tables in ClickHouse, the contracts and what is in
force in PostgreSQL. Through ``stores`` only."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

__all__ = ["FleetData", "ShowbackData", "breach_events", "fleet_data", "showback_data"]

LINES = ("reclaimable_eur", "floor_eur", "fallback_eur", "headroom_eur", "storage_eur", "orchestrator_eur")


@dataclass
class ShowbackData:
    workload: str
    month: date
    month_row: dict[str, Any]
    daily: list[tuple[str, Decimal, Decimal]]   # day, fallback spend, net saving
    contract: dict[str, Any]
    breach: dict[str, Any] | None
    recommendation: dict[str, Any] | None
    breach_events: list[tuple[str, str, str]] = field(default_factory=list)  # time, measured, declared %/h


@dataclass
class FleetData:
    month: date | None
    by_tier: list[tuple[str, Decimal, Decimal]]            # tier, counterfactual, net
    rankings: list[tuple[int, str, float, float, float]]  # rank, pool, score, interruption %/h, discount
    exclusions: list[tuple[str, str, str]]
    groups: dict[str, list[str]]
    changes: list[tuple[str, list[str], float, int]]
    recommendations: list[tuple[str, str, str]] = field(default_factory=list)
    forecast: ForecastScore | None = None


@dataclass
class ForecastScore:
    """The reclaim forecast's latest daily score (``forecast_scores``): its log-loss and Brier score beside the
    baselines' and the reliability diagram's bins (mean forecast, observed share, instances)."""

    day: date
    model_version: str
    samples: int
    log_loss: float
    brier: float
    baselines: dict[str, tuple[float, float]]
    reliability: list[tuple[float, float, float]]
    passed: bool


def _rows(ch: Any, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in ch.query(sql, parameters=params or {}).result_rows]


def _contracts(pg: Any) -> dict[str, dict[str, Any]]:
    if pg is None:
        return {}
    rows = pg.execute("SELECT workload, tier, spec FROM contracts_in_force").fetchall()
    out = {}
    for workload, tier, spec in rows:
        s = spec if isinstance(spec, dict) else json.loads(spec)
        out[str(workload)] = {"tier": tier or s.get("tier") or "-", **s}
    return out


def showback_data(ch: Any, pg: Any, workload: str, month: date) -> ShowbackData | None:
    cols = ["instance_hours", "counterfactual_eur", "gross_saving_eur", *LINES, "costs_eur", "net_saving_eur",
            "wasted_hours", "defect_wasted_eur", "depth_premium_eur", "false_positive_hours", "false_positive_eur",
            "net_pct", "label"]
    found = _rows(ch, f"SELECT {', '.join(cols)} FROM fct_showback_monthly WHERE workload = {{w:String}} "
                      "AND month = {m:Date}", {"w": workload, "m": month})
    if not found:
        return None
    daily = [(str(d), Decimal(f), Decimal(n)) for d, f, n in _rows(
        ch, "SELECT toDate(hour) AS d, sum(fallback_eur), sum(net_saving_eur) FROM fct_savings_ledger "
            "WHERE workload = {w:String} AND toStartOfMonth(hour) = {m:Date} GROUP BY d ORDER BY d",
        {"w": workload, "m": month})]
    breach = _rows(ch, "SELECT measured_rate_pct_h, declared_rate_pct_h, interruptions, instance_hours, breach "
                       "FROM contract_breaches FINAL WHERE workload = {w:String} ORDER BY computed_at DESC LIMIT 1",
                   {"w": workload})
    rec = _rows(ch, "SELECT direction, reason FROM recommendations FINAL WHERE workload = {w:String} "
                    "ORDER BY computed_at DESC LIMIT 1", {"w": workload})
    return ShowbackData(
        workload, month, dict(zip(cols, found[0], strict=True)), daily, _contracts(pg).get(workload, {}),
        dict(zip(("measured", "declared", "interruptions", "hours", "breach"), breach[0], strict=True))
        if breach else None,
        {"direction": rec[0][0], "reason": rec[0][1]} if rec else None, breach_events(ch, workload, month))


def breach_events(ch: Any, workload: str, month: date) -> list[tuple[str, str, str]]:
    """The workload's ``contract-breach`` events of the month (what alerted its owner), oldest first."""
    return [(str(t), str(m), str(d)) for t, m, d in _rows(
        ch, "SELECT time, JSONExtractString(attributes, 'measured_rate_pct_h'), "
            "JSONExtractString(attributes, 'declared_rate_pct_h') FROM events FINAL WHERE kind = 'contract-breach' "
            "AND workload = {w:String} AND toStartOfMonth(time) = {m:Date} ORDER BY time", {"w": workload, "m": month})]


def fleet_data(ch: Any, pg: Any, region: str) -> FleetData:
    months = _rows(ch, "SELECT max(month) FROM fct_showback_monthly")
    month = months[0][0] if months and months[0][0] and str(months[0][0]) != "1970-01-01" else None
    tiers: dict[str, tuple[Decimal, Decimal]] = {}
    contracts = _contracts(pg)
    if month is not None:
        for w, cf, net in _rows(ch, "SELECT workload, counterfactual_eur, net_saving_eur FROM fct_showback_monthly "
                                    "WHERE month = {m:Date}", {"m": month}):
            tier = str(contracts.get(str(w), {}).get("tier", "unknown"))
            a, b = tiers.get(tier, (Decimal(0), Decimal(0)))
            tiers[tier] = (a + Decimal(cf), b + Decimal(net))
    ranks = [(int(r), str(p), float(s), float(i), float(d)) for r, p, s, i, d in _rows(
        ch, "SELECT rank, pool, score, interruption_rate_pct_h, discount FROM rankings WHERE region = {r:String} "
            "AND generation = (SELECT max(generation) FROM rankings WHERE region = {r:String}) ORDER BY rank",
        {"r": region})]
    exclusions: list[tuple[str, str, str]] = []
    groups: dict[str, list[str]] = {}
    if pg is not None:
        exclusions = [(str(p), str(r), str(t)) for p, r, t in pg.execute(
            "SELECT pool, reason, excluded_at FROM exclusions WHERE region = %s ORDER BY pool", (region,)).fetchall()]
        for p, g in pg.execute("SELECT pool, group_id FROM correlation_groups WHERE region = %s ORDER BY pool",
                               (region,)).fetchall():
            groups.setdefault(str(g), []).append(str(p))
    changes = [(str(k), list(p), float(phi), int(j)) for k, p, phi, j in _rows(
        ch, "SELECT kind, pools, phi, joint_windows FROM correlation_group_changes WHERE region = {r:String} AND "
            "computed_at = (SELECT max(computed_at) FROM correlation_group_changes WHERE region = {r:String}) "
            "ORDER BY phi DESC LIMIT 50", {"r": region})]
    recs = [(str(w), str(d), str(r)) for w, d, r in _rows(
        ch, "SELECT workload, argMax(direction, computed_at), argMax(reason, computed_at) FROM recommendations "
            "GROUP BY workload ORDER BY workload")]
    return FleetData(month, sorted((t, cf, n) for t, (cf, n) in tiers.items()), ranks, exclusions, groups, changes,
                     recs, forecast_score(ch, region))


def forecast_score(ch: Any, region: str) -> ForecastScore | None:
    """The forecast's latest daily score in ``region``, or None when it was never scored."""
    rows = _rows(ch, "SELECT day, model_version, samples, forecast_log_loss, forecast_brier, baselines, reliability, "
                     "passed FROM forecast_scores FINAL WHERE region = {r:String} AND horizon_min = 60 "
                     "ORDER BY day DESC LIMIT 1", {"r": region})
    if not rows:
        return None
    day, version, samples, ll, br, baselines, bins, passed = rows[0]
    return ForecastScore(day, str(version), int(samples), float(ll), float(br),
                         {k: (float(v[0]), float(v[1])) for k, v in json.loads(baselines).items()},
                         [(float(a), float(b), float(c)) for a, b, c in json.loads(bins)], bool(passed))
