"""Record a replay trace from the simulated region run in virtual time (a month in seconds), with guaranteed
requests that take free room before they reclaim (``RegionConfig.room_first``, ADR-05).

Every reclaim of the region's own reclaimer becomes a wave: per pool and instant, the share of the pool's
live reclaimable instances that got a notice (or none). Hall-wide reclaims hold their hall's capacity for the
outage; ordinary waves for ``hold``. Rate cards every five minutes follow the region's utilisation. The
orchestrator's share of each pool is what other tenants leave free at nominal demand.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

from contracts.pools import PurchaseModel
from contracts.subjects import EventKind

from ..simregion.config import RegionConfig
from ..simregion.economics import price_factor
from ..simregion.engine import RegionEngine, SimEvent
from . import disk_cache
from .trace import Reclaim, Trace

__all__ = ["cached_trace", "trace_from_region"]


def cached_trace(config: RegionConfig, start: datetime, days: float, warmup_days: float,
                 directory: Path | None) -> Trace:
    """``trace_from_region(config, start, days, warmup_days)``, kept in the replay cache at ``directory`` (None: not
    kept; callers pass ``disk_cache.cache_dir()``) and read from it when the same inputs and code recorded it."""
    return disk_cache.cached("trace", (config.model_dump_json(), start.isoformat(), float(days), float(warmup_days)),
                             lambda: trace_from_region(config, start, days, warmup_days), directory)


def trace_from_region(config: RegionConfig, start: datetime, days: float, warmup_days: float = 7.0,
                      hold: timedelta = timedelta(hours=1),
                      forward_horizon: timedelta = timedelta(minutes=30)) -> Trace:
    """Run the region from ``start - warmup`` to ``start + days`` and return its reclaim trace."""
    begin = start - timedelta(days=warmup_days)
    engine = RegionEngine(config.model_copy(update={"room_first": True}), begin)
    waves: dict[tuple[float, int], list[int]] = defaultdict(lambda: [0, 0, 0])  # (victims, no-notice, hall)
    live_at: dict[tuple[float, int], int] = {}
    cards: list[tuple[datetime, dict[str, Decimal]]] = []
    forward: list[tuple[datetime, dict[str, tuple[float, float]]]] = []
    frees: list[tuple[datetime, dict[str, int]]] = []
    others: list[tuple[datetime, dict[str, int]]] = []

    def on_event(ev: SimEvent) -> None:
        # A victim is one NOTICE, or one NO_NOTICE_LOSS (the region emits it while the instance is still live
        # and deletes it at once). Its later TERMINATED (``notice_ms`` set, or None after a no-notice loss) is
        # the same victim again and is not counted.
        if ev.drill or ev.kind not in (EventKind.NOTICE, EventKind.NO_NOTICE_LOSS):
            return
        no_notice = ev.kind is EventKind.NO_NOTICE_LOSS
        i = engine.index[ev.pool]
        key = (ev.time, i)
        live_at.setdefault(key, len(engine.live[i]))
        wave = waves[key]
        wave[0] += 1
        wave[1] += 1 if no_notice else 0
        wave[2] = 1 if ev.cause.startswith("hall-reclaim") else wave[2]

    def on_rate_card(t: float, rows: list[tuple[int, float, int, int]]) -> None:
        card, ahead, free, live = {}, {}, {}, {}
        later = t + forward_horizon.total_seconds()
        for row in rows:
            i, u = row[0], row[1]
            spec = engine.specs[i]
            pool = spec.pool
            factor = Decimal(str(round(price_factor(u, config.price_demand), 4)))
            card[pool.pool_id] = (pool.guaranteed_rate_eur_h * factor).quantize(Decimal("0.0001"))
            if pool.purchase_model is PurchaseModel.RECLAIMABLE:
                free[pool.pool_id] = int(row[2])  # what other tenants leave free now
                live[pool.pool_id] = len(engine.live[i])
                share = engine.capacity(i, later) / spec.slots if spec.slots else 0.0
                ahead[pool.pool_id] = (share, config.reclaim_rate_pct_h * engine.intensity(pool.aggregate, later))
        cards.append((engine.at(t), card))
        forward.append((engine.at(t), ahead))
        frees.append((engine.at(t), free))
        others.append((engine.at(t), live))

    engine.on_event.append(on_event)
    engine.on_rate_card.append(on_rate_card)
    engine.run_until((days + warmup_days) * 86400.0)
    reclaims = []
    for (t, i), (victims, no_notice, hall) in sorted(waves.items()):
        live = max(live_at[(t, i)], victims)
        reclaims.append(Reclaim(
            time=engine.at(t), pool_id=engine.specs[i].pool.pool_id, share=victims / live,
            no_notice_share=no_notice / victims,
            hold=timedelta(seconds=config.hall_outage_s) if hall else hold, victims=victims))
    capacity = {}
    for spec in engine.specs:
        free_share = 1.0 - config.occupancy if spec.pool.purchase_model is PurchaseModel.RECLAIMABLE else 1.0
        capacity[spec.pool.pool_id] = max(1, int(spec.slots * free_share))
    return Trace(start=start, end=start + timedelta(days=days), pools=tuple(s.pool for s in engine.specs),
                 capacity=capacity, reclaims=tuple(reclaims), seed=config.seed,
                 description=f"simulated region {config.region}, seed {config.seed}, {days:g} days "
                             f"after {warmup_days:g} days of warm-up",
                 warmup=timedelta(days=warmup_days), rate_cards=tuple(cards), forward=tuple(forward),
                 free=tuple(frees), live=tuple(others))
