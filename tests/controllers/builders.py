"""Small builders for planner and replay tests: contracts per tier and hand-made pools."""

from __future__ import annotations

from decimal import Decimal

from contracts.pools import Pool, PurchaseModel
from contracts.schema import Contract, ContractSpec
from contracts.tiers import resolve
from testkit.builders import base


def contract(tier: str = "T3", name: str = "wk", vcpu: int = 4, **fields: object) -> Contract:
    doc = base(tier, workload=name, resources={"vcpu": vcpu, "memory_gib": vcpu * 4}, **fields)
    c, findings = resolve(ContractSpec.model_validate(doc))
    assert c is not None, findings
    return c


def pool(pid: str, *, hall: str = "h1", agg: str | None = None, rate: str = "0.10", model: str = "reclaimable",
         bu: str | None = None, vcpu: int = 4, interruption: str = "0") -> Pool:
    return Pool(pool_id=pid, region="r1", hall=hall, aggregate=agg or f"agg-{pid}", sku_family="std", size="m",
                vcpu=vcpu, memory_gib=vcpu * 4, purchase_model=PurchaseModel(model), rate_eur_h=Decimal(rate),
                guaranteed_rate_eur_h=Decimal("0.40") * vcpu / 4, business_unit=bu,
                interruption_rate_pct_h=Decimal(interruption))
