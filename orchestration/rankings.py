"""The five-minute ranking (ADR-07): gather each pool's inputs from ClickHouse, score them, keep the ranking
with its inputs in ClickHouse and publish it to PostgreSQL as the ranking in force. Drills never count."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from contracts.scoring import FULL, full_pool_share
from contracts.subjects import RECLAIM_KINDS

from .catalogue import load_catalogue
from .scoring import PoolInputs, RankedPool, interruption_stats, rank_pools
from .store import ClickHouse, Postgres, replace_in_force, utc

__all__ = ["IN_FORCE_COLUMNS", "RANKING_COLUMNS", "RECLAIM_FILTER", "ExcludedPool", "Forecast", "excluded_pools",
           "forward_share", "full_since", "gather_inputs", "in_force_rows", "publish_in_force", "rank", "ranking_rows",
           "write_rankings"]

SAMPLE_H = 5 / 60  # a rate-card sample stands for five minutes of the pool
# A reclaim (contracts.subjects.is_reclaim): a notice, or a loss that came without one. Drills never count.
RECLAIM_FILTER = (f"kind IN ({', '.join(repr(str(k)) for k in sorted(RECLAIM_KINDS))}) "
                  "AND NOT drill AND pool != ''")
IN_FORCE_COLUMNS = ("region", "pool", "rank", "score", "generation", "ranked_at", "inputs", "reclaim_p_1h",
                    "reclaim_p", "model_version")
RANKING_COLUMNS = ("ranked_at", "generation", "region", "pool", "rank", "score", "interruption_rate_pct_h",
                   "discount", "depth", "excluded", "inputs")


def forward_share(free_now: int, capacity: int, forward_free: int | None = None) -> float:
    """The depth input (ADR-07, ADR-08): the pool's free share now, or the provider's forecast free share when
    the forward calendar shows less room ahead (a pool is cheap before its guaranteed tenants arrive)."""
    if capacity <= 0:
        return 0.0
    free = free_now if forward_free is None else min(free_now, forward_free)
    return min(1.0, free / capacity)


@dataclass(frozen=True)
class ExcludedPool:
    """An exclusion in force: its cause (``full``: launches refused; ``reclaim``: the pool is being reclaimed) and
    since when."""

    cause: str
    since: datetime


def full_since(excluded: Mapping[str, ExcludedPool]) -> dict[str, datetime]:
    """The pools excluded because launches were refused, and since when: their depth is zero until a rate card
    taken after the refusals shows room again (``contracts.scoring.full_pool_share``)."""
    return {pool: ex.since for pool, ex in excluded.items() if ex.cause == FULL}


def gather_inputs(ch: ClickHouse, region: str, now: datetime, window_days: int = 30,
                  quota_headroom: float = 1.0, forward_free: Mapping[str, int] | None = None,
                  full: Mapping[str, datetime] | None = None) -> list[PoolInputs]:
    """One ``PoolInputs`` per active reclaimable pool of the catalogue; ``forward_free`` is the provider's
    forward capacity (expected free instances per pool, ``Provider.forward_capacity``); ``full``: the pools
    excluded because launches were refused, since when (``full_since``)."""
    start = now - timedelta(days=window_days)
    params = {"r": region, "t0": start, "t1": now}
    pools = load_catalogue(ch, region, "reclaimable")
    card = {str(r[0]): r[1:] for r in ch.rows(
        "SELECT pool, argMax(rate_eur_h, time), argMax(guaranteed_rate_eur_h, time), argMax(free_instances, time), "
        "argMax(capacity, time), sum(instances), max(time) FROM rate_cards "
        "WHERE region = {r:String} AND time > {t0:DateTime64(3)} AND time <= {t1:DateTime64(3)} GROUP BY pool",
        params)}
    reclaims = {str(r[0]): int(r[1]) for r in ch.rows(
        f"SELECT pool, uniqExact(instance) FROM events WHERE region = {{r:String}} AND {RECLAIM_FILTER} "
        "AND time > {t0:DateTime64(3)} AND time <= {t1:DateTime64(3)} GROUP BY pool", params)}
    hours = {pool: float(row[4]) * SAMPLE_H for pool, row in card.items()}  # sum(instances) × 5 min
    stats = interruption_stats(reclaims, hours, window_days * 24.0)
    out = []
    for p in pools:
        row = card.get(p.pool)
        rate, guaranteed = (float(row[0]), float(row[1])) if row else (float(p.rate_eur_h),
                                                                       float(p.guaranteed_rate_eur_h))
        free, capacity = (int(row[2]), int(row[3])) if row else (0, 0)
        rate_pct, mtbi = stats.get(p.pool, (0.0, None))
        share = full_pool_share(forward_share(free, capacity, (forward_free or {}).get(p.pool)),
                                full_since=(full or {}).get(p.pool), card_at=utc(row[5]) if row else None,
                                free_now=free)
        out.append(PoolInputs(pool=p.pool, rate_eur_h=rate, guaranteed_rate_eur_h=guaranteed,
                              interruption_rate_pct_h=rate_pct, mean_time_between_h=mtbi,
                              forward_share=share,
                              quota_headroom=quota_headroom, reclaims=reclaims.get(p.pool, 0),
                              instance_hours=round(hours.get(p.pool, 0.0), 3)))
    return out


def rank(ch: ClickHouse, region: str, now: datetime, window_days: int = 30,
         quota_headroom: float = 1.0, forward_free: Mapping[str, int] | None = None,
         full: Mapping[str, datetime] | None = None) -> list[RankedPool]:
    """The region's pools scored and ranked from the last ``window_days`` of history."""
    return rank_pools(gather_inputs(ch, region, now, window_days, quota_headroom, forward_free, full))


class Forecast(Protocol):
    """A pool's reclaim forecast (``orchestration.forecast.history.PoolForecast``)."""

    @property
    def reclaim_p_1h(self) -> float:
        """P(the pool's instance is reclaimed within 1 h): what the ranking publishes beside its score."""

    @property
    def reclaim_p(self) -> Mapping[str, Mapping[str, float]]:
        """Per horizon (minutes, as text), the model's split of the reclaim probability."""

    @property
    def model_version(self) -> str:
        """The version of the model that made the forecast, so a published one can be scored against it."""


def _forecast_inputs(f: Forecast | None) -> dict[str, object]:
    """The forecast kept with a ranking's inputs (so yesterday's published forecast can be scored)."""
    if f is None:
        return {}
    return {"reclaim_p_1h": f.reclaim_p_1h, "reclaim_p": f.reclaim_p, "model_version": f.model_version}


def ranking_rows(now: datetime, region: str, ranked: list[RankedPool], excluded: Mapping[str, ExcludedPool],
                 groups: Mapping[str, str], forecast: Mapping[str, Forecast] | None = None) -> list[tuple[object, ...]]:
    """The ``rankings`` rows (``RANKING_COLUMNS``): ``excluded`` flags every pool excluded in force, whatever its
    cause; the cause (``full`` or ``reclaim``, "" when not excluded) goes with the inputs, beside the group —
    a full pool's depth is zero (``full_since``), a reclaimed pool's is not, so the inputs need it to be read.
    The reclaim forecast, when there is one, goes with the inputs too."""
    generation = int(now.timestamp() * 1000)
    fc = forecast or {}
    return [(now, generation, region, r.pool, r.rank, r.score, r.inputs.interruption_rate_pct_h, r.discount,
             r.inputs.forward_share, r.pool in excluded,
             json.dumps({**r.inputs.as_dict(), "group": groups.get(r.pool, ""),
                         "exclusion_cause": ex.cause if (ex := excluded.get(r.pool)) else "",
                         **_forecast_inputs(fc.get(r.pool))}, sort_keys=True))
            for r in ranked]


def write_rankings(ch: ClickHouse, region: str, now: datetime, ranked: list[RankedPool],
                   excluded: Mapping[str, ExcludedPool], groups: dict[str, str],
                   forecast: Mapping[str, Forecast] | None = None) -> int:
    """Insert the ranking with its inputs (and the forecast, where there is one) into ``rankings``; the rows."""
    return ch.insert("rankings", ranking_rows(now, region, ranked, excluded, groups, forecast), RANKING_COLUMNS)


def in_force_rows(region: str, now: datetime, ranked: list[RankedPool],
                  forecast: Mapping[str, Forecast] | None = None) -> list[tuple[object, ...]]:
    """The ``rankings_in_force`` rows (``IN_FORCE_COLUMNS``): the forecast's columns are NULL for a pool the
    forecast does not cover (no model fitted yet)."""
    generation = int(now.timestamp() * 1000)
    fc = forecast or {}
    out: list[tuple[object, ...]] = []
    for r in ranked:
        f = fc.get(r.pool)
        out.append((region, r.pool, r.rank, r.score, generation, now, json.dumps(r.inputs.as_dict()),
                    None if f is None else f.reclaim_p_1h,
                    None if f is None else json.dumps(f.reclaim_p, sort_keys=True),
                    None if f is None else f.model_version))
    return out


def publish_in_force(pg: Postgres, region: str, now: datetime, ranked: list[RankedPool],
                     forecast: Mapping[str, Forecast] | None = None) -> None:
    """Replace the region's ranking in force in one transaction (the controller never sees half of one), with
    each pool's reclaim forecast where there is one."""
    replace_in_force(pg, "rankings_in_force", region, IN_FORCE_COLUMNS, in_force_rows(region, now, ranked, forecast))


def excluded_pools(pg: Postgres, region: str, now: datetime) -> dict[str, ExcludedPool]:
    """The exclusions in force, with their cause and since when."""
    with pg.connection() as conn:
        rows = conn.execute("SELECT pool, cause, excluded_at FROM exclusions WHERE region = %s "
                            "AND (until IS NULL OR until > %s)", (region, now)).fetchall()
    return {str(r[0]): ExcludedPool(str(r[1]), r[2]) for r in rows}
