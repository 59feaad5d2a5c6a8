"""Pools and the pool catalogue (ADR-06).

A pool is SKU family × size × hall × purchase model; its host aggregate and hall place it in correlation
groups. The catalogue is read from a CSV file (one pool a row) in the contract repository for the compiler,
and comes from the provider for the controllers. Rates are EUR per hour per instance, as ``Decimal``.
"""

from __future__ import annotations

import csv
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from .errors import CatalogueError
from .schema import Contract

__all__ = ["CatalogueError", "Pool", "PoolCatalogue", "PurchaseModel", "load_catalogue"]


class PurchaseModel(StrEnum):
    """How capacity in a pool is bought: reclaimable (discounted), committed (reserved) or guaranteed."""

    RECLAIMABLE = "reclaimable"
    COMMITTED = "committed"
    GUARANTEED = "guaranteed"


class Pool(BaseModel):
    """One pool: a SKU family and size in one hall of a region, bought one way, with its rates (EUR/h)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pool_id: str
    region: str
    hall: str
    aggregate: str
    sku_family: str
    size: str
    vcpu: int
    memory_gib: int
    gpu: int = 0
    purchase_model: PurchaseModel
    rate_eur_h: Decimal
    guaranteed_rate_eur_h: Decimal
    interruption_rate_pct_h: Decimal = Decimal("0")
    business_unit: str | None = None  # committed pools belong to one business unit

    @property
    def discount_ratio(self) -> Decimal:
        """The pool's rate as a share of the guaranteed rate (1 when there is no guaranteed rate)."""
        return self.rate_eur_h / self.guaranteed_rate_eur_h if self.guaranteed_rate_eur_h else Decimal("1")

    def fits(self, contract: Contract) -> bool:
        """Whether one unit of ``contract`` fits an instance of this pool and the pool is eligible for it."""
        r = contract.resources
        e = contract.eligible
        return (
            self.vcpu >= r.vcpu and self.memory_gib >= r.memory_gib and self.gpu >= r.gpu
            and (not e.sku_families or self.sku_family in e.sku_families)
            and (not e.sizes or self.size in e.sizes)
            and (not e.halls or self.hall in e.halls)
        )


class PoolCatalogue(BaseModel):
    """The pools of every region SCO places in, and where the list came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pools: tuple[Pool, ...]
    source: str = "<memory>"

    def reclaimable_for(self, contract: Contract, discount_threshold: Decimal) -> list[Pool]:
        """Reclaimable discount pools in the contract's region that fit one of its units.

        ADR-08: a pool priced at or above ``discount_threshold`` of the guaranteed rate is not a discount pool).
        """
        return [
            p for p in self.pools
            if p.region == contract.region and p.purchase_model is PurchaseModel.RECLAIMABLE
            and p.fits(contract) and p.discount_ratio < discount_threshold
        ]

    def committed_for(self, contract: Contract) -> list[Pool]:
        """The business unit's committed pools in the contract's region that fit one of its units (ADR-22)."""
        return [
            p for p in self.pools
            if p.region == contract.region and p.purchase_model is PurchaseModel.COMMITTED
            and p.business_unit == contract.business_unit and p.fits(contract)
        ]


_COLUMNS = tuple(Pool.model_fields)


def load_catalogue(path: Path) -> PoolCatalogue:
    """Read a catalogue CSV. Errors name the file, the row and the column."""
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise CatalogueError(f"cannot read pool catalogue {path}: {exc.strerror}") from exc
    with handle:
        reader = csv.DictReader(handle)
        missing = [c for c in ("pool_id", "region", "hall", "aggregate", "sku_family", "size", "vcpu",
                               "memory_gib", "purchase_model", "rate_eur_h", "guaranteed_rate_eur_h")
                   if c not in (reader.fieldnames or [])]
        if missing:
            raise CatalogueError(f"{path}:1: missing column(s) {', '.join(missing)}; expected {', '.join(_COLUMNS)}")
        unknown = [c for c in reader.fieldnames or [] if c not in _COLUMNS]
        if unknown:
            raise CatalogueError(f"{path}:1: unknown column(s) {', '.join(unknown)}; expected {', '.join(_COLUMNS)}")
        pools: list[Pool] = []
        seen: set[str] = set()
        for row in reader:
            line = reader.line_num
            clean = {k: v for k, v in row.items() if v not in ("", None)}
            try:
                for money in ("rate_eur_h", "guaranteed_rate_eur_h", "interruption_rate_pct_h"):
                    if money in clean:
                        clean[money] = str(Decimal(clean[money]))
                pool = Pool.model_validate(clean)
            except InvalidOperation:
                raise CatalogueError(f"{path}:{line}: a rate column is not a decimal number: {row}") from None
            except ValidationError as exc:
                detail = exc.errors()[0]
                column = ".".join(str(x) for x in detail["loc"])
                raise CatalogueError(
                    f"{path}:{line}: column {column}={row.get(column)!r}: {detail['msg']}"
                ) from exc
            if pool.pool_id in seen:
                raise CatalogueError(f"{path}:{line}: duplicate pool_id {pool.pool_id!r}")
            seen.add(pool.pool_id)
            pools.append(pool)
    return PoolCatalogue(pools=tuple(pools), source=str(path))
