"""Advisory precision per pool (ADR-16), contract breaches per workload (ADR-27, ADR-28) and
recommendations (ADR-26: move work off reclaimable capacity when the saving does not justify the risk, onto
it when work behaves as if it could tolerate interruption). Pure rules first, I/O below."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from .rankings import RECLAIM_FILTER
from .store import ClickHouse, Postgres

__all__ = ["ADVISORY_HORIZON_MIN", "Breach", "Recommendation", "advisory_precision", "breaches", "latest_breaches",
           "recommend", "recommendations"]

ADVISORY_HORIZON_MIN = 30   # an advisory counts as right when the instance is reclaimed within this time
MIN_NET_PCT = 20.0          # below this share of the counterfactual the saving does not justify the risk
ONTO_FALLBACK_SHARE = 0.5   # more than half the hours on fallback while interruptions stay within tolerance


@dataclass(frozen=True)
class Breach:
    workload: str
    owner: str
    instance_hours: float
    interruptions: int
    measured_rate_pct_h: float
    declared_rate_pct_h: float

    @property
    def breach(self) -> bool:
        """True when the workload ran and its measured rate exceeds the declared one."""
        return self.instance_hours > 0 and self.measured_rate_pct_h > self.declared_rate_pct_h


@dataclass(frozen=True)
class Recommendation:
    workload: str
    direction: str   # off-reclaimable | onto-reclaimable | stay
    reason: str
    net_saving_eur: Decimal
    net_pct: float
    interruption_pct_h: float


def recommend(workload: str, counterfactual: Decimal, net: Decimal, fallback_hours: Decimal,
              instance_hours: Decimal, measured_pct_h: float, declared_pct_h: float | None) -> Recommendation:
    """Where one workload should run, from its net saving, fallback hours and interruption rates."""
    net_pct = float(net / counterfactual * 100) if counterfactual else 0.0
    if counterfactual > 0 and net <= 0:
        return Recommendation(workload, "off-reclaimable", f"net saving {net:.2f} EUR is not positive: every cost "
                              "of running on reclaimable capacity exceeds the discount", net, net_pct, measured_pct_h)
    if declared_pct_h is not None and measured_pct_h > declared_pct_h:
        return Recommendation(workload, "off-reclaimable", f"measured interruption {measured_pct_h:.2f} %/h exceeds "
                              f"the declared {declared_pct_h:.2f} %/h: move off or declare a tier that fits",
                              net, net_pct, measured_pct_h)
    if counterfactual > 0 and net_pct < MIN_NET_PCT:
        return Recommendation(workload, "off-reclaimable", f"net saving is {net_pct:.1f} % of the counterfactual, "
                              f"below {MIN_NET_PCT:.0f} %: the saving does not justify the risk", net, net_pct,
                              measured_pct_h)
    if instance_hours > 0 and fallback_hours / instance_hours > Decimal(str(ONTO_FALLBACK_SHARE)) and \
            (declared_pct_h is None or measured_pct_h <= declared_pct_h / 2):
        return Recommendation(workload, "onto-reclaimable", f"{fallback_hours / instance_hours:.0%} of its hours run "
                              "on guaranteed fallback while interruptions stay under half its tolerance: return "
                              "it to reclaimable capacity", net, net_pct, measured_pct_h)
    return Recommendation(workload, "stay", "the net saving justifies the risk", net, net_pct, measured_pct_h)


# -- I/O -------------------------------------------------------------------------------------------------
def advisory_precision(ch: ClickHouse, region: str, now: datetime, days: int = 30) -> list[tuple[object, ...]]:
    """Per pool: advisories, advisories followed by a reclaim of the same instance, reclaims, advised
    reclaims, precision and recall. Written to ``advisory_precision``."""
    p = {"r": region, "t0": now - timedelta(days=days), "t1": now}
    window = "region = {r:String} AND time > {t0:DateTime64(3)} AND time <= {t1:DateTime64(3)}"
    rows = ch.rows(
        "SELECT a.pool, count() AS n, countIf(r.t > a.t AND r.t <= a.t + INTERVAL "
        f"{ADVISORY_HORIZON_MIN} MINUTE) AS ok FROM "
        f"(SELECT instance, any(pool) AS pool, min(time) AS t FROM events WHERE kind = 'advisory' AND NOT drill "
        f" AND {window} GROUP BY instance) AS a "
        f"LEFT JOIN (SELECT instance, min(time) AS t FROM events WHERE {RECLAIM_FILTER} AND {window} "
        " GROUP BY instance) AS r ON a.instance = r.instance GROUP BY a.pool", p)
    recl = {str(r[0]): (int(r[1]), int(r[2])) for r in ch.rows(
        "SELECT pool, count(), countIf(advised) FROM (SELECT instance, any(pool) AS pool, "
        "max(kind = 'advisory') AS advised, max(" + RECLAIM_FILTER.replace("AND NOT drill AND pool != ''", "") +
        ") AS reclaimed FROM events WHERE NOT drill AND " + window + " GROUP BY instance) WHERE reclaimed "
        "GROUP BY pool", p)}
    out: list[tuple[object, ...]] = []
    for pool, n, ok in rows:
        reclaims, advised = recl.get(str(pool), (0, 0))
        precision = round(int(ok) / int(n), 6) if n else 0.0
        recall = round(advised / reclaims, 6) if reclaims else 0.0
        out.append((now, region, str(pool), int(n), int(ok), reclaims, advised, precision, recall))
    ch.insert("advisory_precision", out, ("computed_at", "region", "pool", "advisories", "followed", "reclaims",
                                          "advised_reclaims", "precision", "recall"))
    return out


def declared(pg: Postgres) -> dict[str, tuple[str, float | None]]:
    """workload -> (owner, declared max interruption %/h) from the contracts in force."""
    with pg.connection() as conn:
        rows = conn.execute("SELECT workload, spec FROM contracts_in_force").fetchall()
    out: dict[str, tuple[str, float | None]] = {}
    for workload, spec in rows:
        s = spec if isinstance(spec, dict) else json.loads(spec)
        rate = s.get("max_interruption_rate_pct_h")
        out[str(workload)] = (str(s.get("owner", "")), float(rate) if rate is not None else None)
    return out


def breaches(ch: ClickHouse, pg: Postgres, region: str, now: datetime, days: int = 30) -> list[Breach]:
    """Each workload's measured interruption rate over ``days`` against its contract's declared rate."""
    p = {"r": region, "t0": now - timedelta(days=days), "t1": now}
    hours = {str(r[0]): float(r[1]) for r in ch.rows(
        "SELECT workload, sum(instance_hours) FROM savings_ledger FINAL WHERE hour >= {t0:DateTime64(3)} "
        "AND hour < {t1:DateTime64(3)} GROUP BY workload", p)}
    hits = {str(r[0]): int(r[1]) for r in ch.rows(
        f"SELECT workload, uniqExact(instance) FROM events WHERE region = {{r:String}} AND {RECLAIM_FILTER} "
        "AND workload != '' AND time > {t0:DateTime64(3)} AND time <= {t1:DateTime64(3)} GROUP BY workload", p)}
    out = []
    for workload, (owner, rate) in sorted(declared(pg).items()):
        h = hours.get(workload, 0.0)
        n = hits.get(workload, 0)
        measured = round(100.0 * n / h, 6) if h else 0.0
        out.append(Breach(workload, owner, h, n, measured, rate if rate is not None else 100.0))
    ch.insert("contract_breaches", [(now, b.workload, days, b.instance_hours, b.interruptions, b.measured_rate_pct_h,
                                     b.declared_rate_pct_h, b.breach, b.owner) for b in out],
              ("computed_at", "workload", "window_days", "instance_hours", "interruptions", "measured_rate_pct_h",
               "declared_rate_pct_h", "breach", "owner"))
    return out


def latest_breaches(ch: ClickHouse) -> list[Breach]:
    """What the latest ``contract_breaches`` materialisation recorded, per workload."""
    return [Breach(str(w), str(o), float(h), int(n), float(m), float(d)) for w, o, h, n, m, d in ch.rows(
        "SELECT workload, argMax(owner, computed_at), argMax(instance_hours, computed_at), "
        "argMax(interruptions, computed_at), argMax(measured_rate_pct_h, computed_at), "
        "argMax(declared_rate_pct_h, computed_at) FROM contract_breaches GROUP BY workload")]


def recommendations(ch: ClickHouse, now: datetime, found: list[Breach], days: int = 30) -> list[Recommendation]:
    """A recommendation per workload of the ledger over ``days``, given the breaches found."""
    p = {"t0": now - timedelta(days=days), "t1": now}
    by = {b.workload: b for b in found}
    out = []
    for w, cf, net, fb, ih in ch.rows(
            "SELECT workload, sum(counterfactual_eur), sum(net_saving_eur), sum(fallback_hours), sum(instance_hours) "
            "FROM savings_ledger FINAL WHERE hour >= {t0:DateTime64(3)} AND hour < {t1:DateTime64(3)} "
            "GROUP BY workload ORDER BY workload", p):
        b = by.get(str(w))
        out.append(recommend(str(w), Decimal(cf), Decimal(net), Decimal(fb), Decimal(ih),
                             b.measured_rate_pct_h if b else 0.0, b.declared_rate_pct_h if b else None))
    ch.insert("recommendations", [(now, r.workload, r.direction, r.reason, r.net_saving_eur, r.net_pct,
                                   r.interruption_pct_h) for r in out],
              ("computed_at", "workload", "direction", "reason", "net_saving_eur", "net_pct", "interruption_pct_h"))
    return out
