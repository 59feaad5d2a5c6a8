"""A simulated region's history as the reclaim forecast's frames (``orchestration.forecast.features``): what
``bench.forecast`` scores and the forecast's tests fit on."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

__all__ = ["FORWARD_S", "START", "simulated_history"]

START = datetime(2026, 10, 1, tzinfo=UTC)
FORWARD_S = 1800.0   # the forward calendar's horizon the replay's feed asks for (30 min)


def simulated_history(seed: int, days: float, start: datetime = START, rate_pct_h: float = 4.0,
                      pools: int | None = None) -> Any:
    """(cards, pools, reclaims) frames of ``days`` of the simulated region (room-first, as the replay runs it;
    ``pools``: trimmed to that many reclaimable pools)."""
    import polars as pl

    from contracts.pools import PurchaseModel
    from contracts.subjects import EventKind
    from controllers.simregion.config import RegionConfig
    from controllers.simregion.economics import price_factor
    from controllers.simregion.engine import RegionEngine, SimEvent
    from orchestration.forecast.features import CARD_SCHEMA, POOL_SCHEMA, RECLAIM_SCHEMA

    config = RegionConfig(seed=seed, reclaim_rate_pct_h=rate_pct_h, room_first=True, pools=pools)
    engine = RegionEngine(config, start)
    specs = engine.specs
    cols: dict[str, list[Any]] = {c: [] for c in CARD_SCHEMA}
    rec: dict[str, list[Any]] = {c: [] for c in RECLAIM_SCHEMA}

    def on_card(t: float, rows: list[tuple[int, float, int, int]]) -> None:
        when = engine.at(t)
        for i, u, free, cap in rows:
            g = float(specs[i].pool.guaranteed_rate_eur_h)
            n = len(engine.live[i])
            rate = round(g * price_factor(u, config.price_demand), 4)
            ahead = float(max(engine.capacity(i, t + FORWARD_S) - n, 0))
            for c, v in zip(CARD_SCHEMA, (when, specs[i].pool.pool_id, rate, g, free, cap, n, ahead), strict=True):
                cols[c].append(v)

    def on_event(ev: SimEvent) -> None:
        if not ev.drill and ev.kind in (EventKind.NOTICE, EventKind.NO_NOTICE_LOSS):
            for c, v in zip(RECLAIM_SCHEMA, (engine.at(ev.time), ev.pool, ev.kind is EventKind.NOTICE), strict=True):
                rec[c].append(v)

    engine.on_rate_card.append(on_card)
    engine.on_event.append(on_event)
    engine.run_until(days * 86400.0)
    catalogue = pl.DataFrame([(s.pool.pool_id, s.pool.aggregate, s.pool.hall, s.pool.vcpu, s.pool.aggregate)
                          for s in specs if s.pool.purchase_model is PurchaseModel.RECLAIMABLE],
                         schema=POOL_SCHEMA, orient="row")
    return pl.DataFrame(cols, schema=CARD_SCHEMA), catalogue, pl.DataFrame(rec, schema=RECLAIM_SCHEMA)
