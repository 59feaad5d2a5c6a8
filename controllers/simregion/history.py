"""Write a pool history into ClickHouse: run the simulated region in virtual time for N days and insert its
lifecycle events (``events``, the columns of ``contracts.events.Event.row()``), its rate cards with pool
occupancy every five minutes (``rate_cards``) and its catalogue (``provider_pools``); tables from
``stores/migrations/clickhouse/0200_pool_history.sql``. Rows are built straight from the engine's records
(no pydantic per row) and inserted as Arrow tables one simulated day at a time, so 90 days × 140 pools fit
in memory and in about a minute.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from contracts.pools import PurchaseModel

from .config import RegionConfig
from .economics import price_factor
from .engine import RegionEngine, SimEvent

__all__ = ["HistoryReport", "write_history"]

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
    """Simulate ``days`` of pool history from ``start`` and write it to ClickHouse; what was written."""
    if days < 1:
        raise ValueError(f"days must be >= 1, got {days}")
    if start.tzinfo is None:
        raise ValueError("start must carry a timezone (UTC)")
    start = start.astimezone(UTC)
    engine = RegionEngine(config, start)
    writer = _HistoryWriter(client, config, engine, start)
    engine.on_event.append(writer.on_event)
    engine.on_rate_card.append(writer.on_rate_card)
    _insert_pools(client, engine, start)
    for day in range(1, days + 1):
        engine.run_until(day * 86400.0 - 1e-6)  # a day's last rate card belongs to the next day
        writer.flush()
        if progress is not None:
            progress(day, days)
    specs = engine.specs
    return HistoryReport(days=days, pools=sum(1 for s in specs if s.pool.purchase_model is PurchaseModel.RECLAIMABLE),
                         events=writer.events, rate_card_rows=writer.rates, reclaimed=engine.stats.reclaimed,
                         reclaim_rate_pct_h=round(engine.stats.reclaim_rate_pct_h, 4), start=start,
                         end=start + timedelta(days=days))


class _HistoryWriter:
    """Collects the engine's events and rate cards column by column and inserts them as Arrow, a day at a time."""

    def __init__(self, client: Any, config: RegionConfig, engine: RegionEngine, start: datetime) -> None:
        self.client, self.config, self.engine = client, config, engine
        self.ids = random.Random(f"{config.seed}:history-event-ids")
        self.start_ms = int(start.timestamp() * 1000)
        self.ev: dict[str, list[Any]] = {c: [] for c in ("event_id", "kind", "time", "partition", "pool", "instance",
                                                         "workload", "cause", "drill", "attributes")}
        self.rc: dict[str, list[Any]] = {c: [] for c in ("time", "pool", "rate_eur_h", "guaranteed_rate_eur_h",
                                                         "utilisation", "free_instances", "instances", "capacity")}
        self.events = self.rates = 0
        self.pool_ids = [s.pool.pool_id for s in engine.specs]
        self.guaranteed = [float(s.pool.guaranteed_rate_eur_h) for s in engine.specs]

    def on_event(self, e: SimEvent) -> None:
        ev = self.ev
        bits = f"{self.ids.getrandbits(128):032x}"
        ev["event_id"].append(f"{bits[:8]}-{bits[8:12]}-4{bits[13:16]}-a{bits[17:20]}-{bits[20:]}")
        ev["kind"].append(e.kind.value)
        ev["time"].append(self.start_ms + int(e.time * 1000))
        ev["partition"].append(e.partition)
        ev["pool"].append(e.pool)
        ev["instance"].append(e.instance)
        ev["workload"].append(e.workload)
        ev["cause"].append(e.cause)
        ev["drill"].append(e.drill)
        ev["attributes"].append(json.dumps(e.attributes, sort_keys=True))

    def on_rate_card(self, t: float, rows: list[tuple[int, float, int, int]]) -> None:
        rc, n, guaranteed = self.rc, len(rows), self.guaranteed
        rc["time"].extend([self.start_ms + int(t * 1000)] * n)
        rc["pool"].extend([self.pool_ids[r[0]] for r in rows])
        rc["rate_eur_h"].extend([round(guaranteed[r[0]] * price_factor(r[1], self.config.price_demand), 4)
                                  for r in rows])
        rc["guaranteed_rate_eur_h"].extend([guaranteed[r[0]] for r in rows])
        rc["utilisation"].extend([round(r[1], 4) for r in rows])
        rc["free_instances"].extend([r[2] for r in rows])
        rc["instances"].extend([len(self.engine.live[r[0]]) for r in rows])
        rc["capacity"].extend([r[3] for r in rows])

    def flush(self) -> None:
        import pyarrow as pa

        ev, rc, region = self.ev, self.rc, self.config.region
        money, ts = pa.decimal128(12, 4), pa.timestamp("ms", tz="UTC")
        n = len(ev["event_id"])
        if n:
            self.client.insert_arrow("events", pa.table({
                "event_id": ev["event_id"], "kind": ev["kind"], "time": pa.array(ev["time"], ts),
                "region": [region] * n, "partition": ev["partition"], "pool": ev["pool"],
                "instance": ev["instance"], "workload": ev["workload"], "contract_version": [""] * n,
                "cause": ev["cause"], "drill": ev["drill"], "source": [SOURCE] * n,
                "attributes": ev["attributes"]}))
            self.events += n
        n = len(rc["time"])
        if n:
            self.client.insert_arrow("rate_cards", pa.table({
                "time": pa.array(rc["time"], ts), "region": [region] * n, "pool": rc["pool"],
                "rate_eur_h": pa.array(rc["rate_eur_h"], pa.float64()).cast(money),
                "guaranteed_rate_eur_h": pa.array(rc["guaranteed_rate_eur_h"], pa.float64()).cast(money),
                "utilisation": rc["utilisation"], "free_instances": pa.array(rc["free_instances"], pa.uint32()),
                "instances": pa.array(rc["instances"], pa.uint32()), "capacity": pa.array(rc["capacity"], pa.uint32()),
                "source": [SOURCE] * n}))
            self.rates += n
        for col in (*ev.values(), *rc.values()):
            col.clear()


def _insert_pools(client: Any, engine: RegionEngine, when: datetime) -> None:
    rows = []
    for spec in engine.specs:
        p = spec.pool
        rows.append([p.region, p.pool_id, p.hall, p.aggregate, p.sku_family, p.size, p.vcpu, p.memory_gib, p.gpu,
                     str(p.purchase_model), p.business_unit or "", p.rate_eur_h, p.guaranteed_rate_eur_h, spec.slots,
                     when])
    client.insert("provider_pools", rows, column_names=list(POOL_COLUMNS))

