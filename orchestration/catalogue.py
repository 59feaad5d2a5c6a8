"""The pool catalogue and rate cards as the analytics see them: ``provider_pools`` and ``rate_cards``
(migration 0200), written by the provider feed live and by ``sco sim history`` in bulk."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from contracts.pools import Pool

from .store import ClickHouse

__all__ = ["CATALOGUE_COLUMNS", "CataloguePool", "load_catalogue", "write_catalogue"]

CATALOGUE_COLUMNS = ("region", "pool", "hall", "aggregate", "sku_family", "size", "vcpu", "memory_gib", "gpu",
                     "purchase_model", "business_unit", "rate_eur_h", "guaranteed_rate_eur_h", "slots", "updated_at")


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
    rows = [(p.region, p.pool_id, p.hall, p.aggregate, p.sku_family, p.size, p.vcpu, p.memory_gib, p.gpu,
             str(p.purchase_model), p.business_unit or "", p.rate_eur_h, p.guaranteed_rate_eur_h, slots, updated_at)
            for p in pools]
    return ch.insert("provider_pools", rows, CATALOGUE_COLUMNS)


def load_catalogue(ch: ClickHouse, region: str, purchase_model: str | None = None) -> list[CataloguePool]:
    sql = ("SELECT pool, region, hall, aggregate, purchase_model, vcpu, rate_eur_h, guaranteed_rate_eur_h, "
           "business_unit FROM provider_pools FINAL WHERE region = {r:String}")
    params: dict[str, object] = {"r": region}
    if purchase_model:
        sql += " AND purchase_model = {m:String}"
        params["m"] = purchase_model
    return [CataloguePool(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), int(r[5]), Decimal(r[6]),
                          Decimal(r[7]), str(r[8])) for r in ch.rows(sql + " ORDER BY pool", params)]
