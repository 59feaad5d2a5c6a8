"""Write a pool history into ClickHouse: run the simulated region in virtual time for N days and insert its
lifecycle events (``events``, the columns of ``contracts.events.Event.row()``), its rate cards with pool
occupancy every five minutes (``rate_cards``) and its catalogue (``provider_pools``); tables from
``sco/stores/migrations/clickhouse/0200_pool_history.sql``. Rows are built straight from the engine's records
(no pydantic per row) and inserted column-oriented one simulated day at a time, so 90 days × 140 pools fit
in memory and in about a minute.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from contracts.pools import PurchaseModel
from contracts.subjects import EventKind

from .config import RegionConfig
from .engine import RegionEngine, SimEvent
from .region import price_factor

__all__ = ["EVENT_COLUMNS", "RATE_COLUMNS", "HistoryReport", "write_history"]

EVENT_COLUMNS = ("event_id", "kind", "time", "region", "partition", "pool", "instance", "workload",
                 "contract_version", "cause", "drill", "source", "attributes")
RATE_COLUMNS = ("time", "region", "pool", "rate_eur_h", "guaranteed_rate_eur_h", "utilisation", "free_instances",
                "instances", "capacity", "source")
POOL_COLUMNS = ("region", "pool", "hall", "aggregate", "sku_family", "size", "vcpu", "memory_gib", "gpu",
                "purchase_model", "business_unit", "rate_eur_h", "guaranteed_rate_eur_h", "slots", "updated_at")
SOURCE = "simregion"


@dataclass(frozen=True)
class HistoryReport:
    days: int
    pools: int
    events: int
    rate_card_rows: int
    reclaimed: int
    reclaim_rate_pct_h: float
    start: datetime
    end: datetime


def write_history(client: Any, config: RegionConfig, *, days: int, start: datetime,
                  progress: Callable[[int, int], None] | None = None) -> HistoryReport:
    if days < 1:
        raise ValueError(f"days must be >= 1, got {days}")
    if start.tzinfo is None:
        raise ValueError("start must carry a timezone (UTC)")
    engine = RegionEngine(config, start.astimezone(UTC))
    ids = random.Random(f"{config.seed}:history-event-ids")
    region = config.region
    events: list[list[Any]] = [[] for _ in EVENT_COLUMNS]
    rates: list[list[Any]] = [[] for _ in RATE_COLUMNS]
    totals = {"events": 0, "rates": 0}
    specs = engine.specs

    def on_event(ev: SimEvent) -> None:
        row = (str(uuid.UUID(int=ids.getrandbits(128), version=4)), str(ev.kind), start + timedelta(seconds=ev.time),
               region, ev.partition, ev.pool, ev.instance, ev.workload, "", ev.cause, ev.drill, SOURCE,
               json.dumps(ev.attributes, sort_keys=True))
        for col, value in zip(events, row, strict=True):
            col.append(value)

    def on_rate_card(t: float, rows: list[tuple[int, float, int]]) -> None:
        when = start + timedelta(seconds=t)
        for i, u, free in rows:
            pool = specs[i].pool
            g = float(pool.guaranteed_rate_eur_h)
            row = (when, region, pool.pool_id, round(g * price_factor(u), 4), g, round(u, 4), free,
                   len(engine.live[i]), engine.capacity(i, t), SOURCE)
            for col, value in zip(rates, row, strict=True):
                col.append(value)

    engine.on_event.append(on_event)
    engine.on_rate_card.append(on_rate_card)
    _insert_pools(client, engine, start)

    def flush() -> None:
        if events[0]:
            client.insert("events", events, column_names=list(EVENT_COLUMNS), column_oriented=True)
            totals["events"] += len(events[0])
        if rates[0]:
            client.insert("rate_cards", rates, column_names=list(RATE_COLUMNS), column_oriented=True)
            totals["rates"] += len(rates[0])
        for col in (*events, *rates):
            col.clear()

    for day in range(1, days + 1):
        engine.run_until(day * 86400.0 - 1e-6)  # a day's last rate card belongs to the next day
        flush()
        if progress is not None:
            progress(day, days)
    return HistoryReport(days=days, pools=sum(1 for s in specs if s.pool.purchase_model is PurchaseModel.RECLAIMABLE),
                         events=totals["events"], rate_card_rows=totals["rates"], reclaimed=engine.stats.reclaimed,
                         reclaim_rate_pct_h=round(engine.stats.reclaim_rate_pct_h, 4), start=start,
                         end=start + timedelta(days=days))


def _insert_pools(client: Any, engine: RegionEngine, when: datetime) -> None:
    rows = []
    for spec in engine.specs:
        p = spec.pool
        rows.append([p.region, p.pool_id, p.hall, p.aggregate, p.sku_family, p.size, p.vcpu, p.memory_gib, p.gpu,
                     str(p.purchase_model), p.business_unit or "", p.rate_eur_h, p.guaranteed_rate_eur_h, spec.slots,
                     when])
    client.insert("provider_pools", rows, column_names=list(POOL_COLUMNS))


_ = EventKind  # the kinds written are EventKind values (notice, advisory, terminated, launched)
