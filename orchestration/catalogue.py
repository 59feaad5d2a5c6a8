"""The pool catalogue and rate cards as the analytics see them: ``provider_pools`` and ``rate_cards``
(migration 0200), written by the provider feed live and by ``sco sim history`` in bulk."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from contracts.pools import Pool, PoolCatalogue
from contracts.provider import RateCard

from .store import ClickHouse

__all__ = ["CATALOGUE_COLUMNS", "RATE_CARD_COLUMNS", "CataloguePool", "load_catalogue", "refresh_from_feed", "summary",
           "write_catalogue", "write_rate_card"]

CATALOGUE_COLUMNS = ("region", "pool", "hall", "aggregate", "sku_family", "size", "vcpu", "memory_gib", "gpu",
                     "purchase_model", "business_unit", "rate_eur_h", "guaranteed_rate_eur_h", "slots", "updated_at")
RATE_CARD_COLUMNS = ("time", "region", "pool", "rate_eur_h", "guaranteed_rate_eur_h", "utilisation", "free_instances",
                     "instances", "capacity", "source")


@dataclass(frozen=True)
class CataloguePool:
    pool: str
    region: str
    hall: str
    aggregate: str
    purchase_model: str
    vcpu: int
    rate_eur_h: Decimal
    guaranteed_rate_eur_h: Decimal
    business_unit: str = ""


def write_catalogue(ch: ClickHouse, pools: Iterable[Pool], updated_at: datetime, slots: int = 0) -> int:
    """Insert the pools into ``provider_pools`` as of ``updated_at``; the number of rows."""
    rows = [(p.region, p.pool_id, p.hall, p.aggregate, p.sku_family, p.size, p.vcpu, p.memory_gib, p.gpu,
             str(p.purchase_model), p.business_unit or "", p.rate_eur_h, p.guaranteed_rate_eur_h, slots, updated_at)
            for p in pools]
    return ch.insert("provider_pools", rows, CATALOGUE_COLUMNS)


def load_catalogue(ch: ClickHouse, region: str, purchase_model: str | None = None) -> list[CataloguePool]:
    """The region's pools in force (optionally one purchase model) from ``provider_pools``."""
    sql = ("SELECT pool, region, hall, aggregate, purchase_model, vcpu, rate_eur_h, guaranteed_rate_eur_h, "
           "business_unit FROM provider_pools FINAL WHERE region = {r:String}")
    params: dict[str, object] = {"r": region}
    if purchase_model:
        sql += " AND purchase_model = {m:String}"
        params["m"] = purchase_model
    return [CataloguePool(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), int(r[5]), Decimal(r[6]),
                          Decimal(r[7]), str(r[8])) for r in ch.rows(sql + " ORDER BY pool", params)]


def write_rate_card(ch: ClickHouse, card: RateCard) -> int:
    """One ``rate_cards`` row per entry of a rate card read from the provider feed."""
    return ch.insert("rate_cards", [
        (card.time, card.region, e.pool_id, e.rate_eur_h, e.guaranteed_rate_eur_h, e.utilisation,
         e.free_instances, 0, e.free_instances, "feed") for e in card.entries], RATE_CARD_COLUMNS)


def refresh_from_feed(ch: ClickHouse, region: str, catalogue_doc: Any, rate_card_doc: Any) -> None:
    """Write the region's pools and the rate card the provider feed served (``/v1/catalogue``,
    ``/v1/rate-card``); the feed serves the pools as a list (``controllers.providers.SimulatedProvider``)."""
    catalogue = PoolCatalogue.model_validate({"pools": catalogue_doc} if isinstance(catalogue_doc, list)
                                             else catalogue_doc)
    card = RateCard.model_validate(rate_card_doc)
    write_catalogue(ch, [p for p in catalogue.pools if p.region == region], card.time)
    write_rate_card(ch, card)


def summary(pools: list[CataloguePool]) -> dict[str, int]:
    """Pools per purchase model, aggregates and halls: the catalogue asset's metadata."""
    by_model: dict[str, int] = {}
    for p in pools:
        by_model[p.purchase_model] = by_model.get(p.purchase_model, 0) + 1
    return {"pools": len(pools), **{f"pools_{k}": v for k, v in by_model.items()},
            "aggregates": len({p.aggregate for p in pools}), "halls": len({p.hall for p in pools})}
