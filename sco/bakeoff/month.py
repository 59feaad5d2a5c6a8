"""One strategy-month through the production controller, as a ``contracts.bakeoff.StrategyMonth``.

The region of one seed is recorded once (room-first, ~4 %/h, ``trace_from_region``) and cached on disk, keyed by
every input that shapes it and the code; each workload's claim is held to what the region lends its shape
(``size_claims``); the strategy is replayed through the controller (``run_controller_engine``: observe → decide →
apply with the production scorer, planner, floor keeper, fallback arbiter and breaker) on a fresh embedded
PostgreSQL. What a Dagster partition runs, in its own process or pod.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contracts.bakeoff import MAX_OUTSIDE_CHARS, WATERFALL_POINTS, StrategyMonth
from contracts.schema import Contract

ADR03_START = datetime(2026, 10, 1, tzinfo=UTC)  # the first replayed day of the documented months

__all__ = ["ADR03_START", "MonthSpec", "month_record", "record_trace", "strategy_month"]


@dataclass(frozen=True)
class MonthSpec:
    """What one strategy-month replays: the region's seed and rates, the days, the claims and the contracts."""

    seed: int
    strategy: str
    days: float = 30.0
    warmup_days: float = 7.0
    start: datetime = ADR03_START
    units: int = 40
    rate_pct_h: float = 4.0
    price_demand: float = 1.0   # the region's own default, as ``sco simulate`` and ``bench.replay_compare`` record it
    revision: str = ""


def record_trace(spec: MonthSpec, cache: Path) -> Any:
    """The seed's recorded region, from the replay cache under ``cache`` when it holds it (``disk_cache``: keyed by
    every input that shapes it and by the code, written whole, refused unless the directory is private)."""
    from controllers.replay.from_region import cached_trace
    from controllers.simregion.config import RegionConfig

    config = RegionConfig(seed=spec.seed, reclaim_rate_pct_h=spec.rate_pct_h, price_demand=spec.price_demand)
    return cached_trace(config, spec.start, spec.days, spec.warmup_days, cache)


def strategy_month(spec: MonthSpec, contracts: Sequence[Contract], cache: Path,
                   progress: Callable[[float], None] | None = None) -> StrategyMonth:
    """Replay ``spec`` through the production controller and summarise it."""
    from controllers.planning import Caps, Strategy
    from controllers.replay import size_claims
    from controllers.simregion.config import RegionConfig
    from sco.commands.simulate_controller import EmbeddedPostgres, run_controller_engine

    began = time.monotonic()
    trace = record_trace(spec, cache)
    claims = {s.workload: s.units for s in size_claims(trace, contracts, spec.units)}
    config = RegionConfig(seed=spec.seed, reclaim_rate_pct_h=spec.rate_pct_h, price_demand=spec.price_demand)
    pg = EmbeddedPostgres()
    try:
        outcomes = run_controller_engine(pg.database(), config, spec.start, spec.days, contracts, claims,
                                         Strategy(spec.strategy), spec.warmup_days, progress, {}, caps=Caps(),
                                         cache=cache)
    finally:
        pg.close()
    return month_record(spec, Strategy(spec.strategy), outcomes, contracts, time.monotonic() - began)


def month_record(spec: MonthSpec, strategy: Any, outcomes: Mapping[str, Any], contracts: Sequence[Contract],
                 seconds: float) -> StrategyMonth:
    """The record of one replay's outcomes: the comparison table's columns and the ceiling the floors allow."""
    from controllers.replay.figures import run_figures

    f = run_figures(strategy, outcomes, contracts)
    s, falls, outside = f.summary, f.waterfall, [v.line() for v in f.outside]
    return StrategyMonth(
        seed=spec.seed, strategy=spec.strategy, days=spec.days, warmup_days=spec.warmup_days, revision=spec.revision,
        interruptions_pct_h=s.interruption_rate_pct_h, interruptions=s.interruptions, wasted_pct=s.wasted_pct,
        shortfall_pct=s.shortfall_pct, shortfall_wait_pct=f.shortfall_wait_pct,
        net_pct=s.net_pct, net_planning_pct=s.net_planning_pct, ceiling_pct=f.ceiling_pct,
        worst_step_pct=min(100.0, s.worst_step_loss_pct), worst_workload=f.worst_workload,
        seconds=seconds, workloads_outside=len(outside), outside=_bounded("\n".join(outside), MAX_OUTSIDE_CHARS),
        achieved_pts=falls.get("net", 0.0), **{field: falls.get(item, 0.0) for item, field in WATERFALL_POINTS.items()})


def _bounded(text: str, most: int) -> str:
    return text if len(text) <= most else text[:most - 1] + "…"
