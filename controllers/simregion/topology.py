"""The simulated region's topology: 3 halls, two host aggregates per hall, SKU families and flavour sizes
giving 141 reclaimable pools (ADR-06: SKU family × size × hall × purchase model), plus committed pools per
business unit (Blazar reservations, ADR-22) and guaranteed pools per hall (fallback). Deterministic: no
randomness here; slots (reclaimable instances a pool holds at nominal guaranteed demand) follow size.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from contracts.pools import Pool, PurchaseModel

__all__ = ["BUSINESS_UNITS", "HALLS", "PoolSpec", "build_pools"]

HALLS = ("h1", "h2", "h3")
BUSINESS_UNITS = ("analytics", "research", "engineering", "commerce", "platform")  # the example repository's
_SIZES = {"small": 4, "medium": 8, "large": 16, "xlarge": 32, "2xlarge": 64}
_ALL = tuple(_SIZES)
# aggregate suffix -> SKU family -> sizes; the two aggregates of a hall hold different hardware generations
_FAMILIES: dict[str, dict[str, tuple[str, ...]]] = {
    "a": {"std-g5": _ALL[:4], "std-g7": _ALL, "hm-g5": _ALL[1:], "cc-g6": _ALL[1:], "amd-g4": _ALL[1:],
          "gpu-a100": ("4g",)},
    "b": {"std-g6": _ALL, "amd-g5": _ALL[1:], "arm-g1": _ALL[1:], "cc-g7": _ALL[1:], "hm-g6": _ALL[1:],
          "gpu-a100": ("1g",), "gpu-l40": ("1g", "2g", "4g")},
}
_GPU = {"1g": (16, 1), "2g": (32, 2), "4g": (64, 4)}
_MEM_PER_VCPU = {"std": 4, "amd": 4, "arm": 4, "hm": 8, "cc": 2}
_PRICE_PER_VCPU = {"std": Decimal("0.0400"), "amd": Decimal("0.0340"), "arm": Decimal("0.0280"),
                   "hm": Decimal("0.0500"), "cc": Decimal("0.0360")}
_PRICE_PER_GPU = {"gpu-a100": Decimal("2.5000"), "gpu-l40": Decimal("1.6000")}


@dataclass(frozen=True, slots=True)
class PoolSpec:
    pool: Pool
    slots: int  # reclaimable instances at nominal guaranteed demand (committed: reserved instances)


def _shape(family: str, size: str) -> tuple[int, int, int, Decimal]:
    if family.startswith("gpu"):
        vcpu, gpu = _GPU[size]
        mem = vcpu * (8 if family == "gpu-a100" else 6)
        return vcpu, mem, gpu, (Decimal("0.0400") * vcpu + _PRICE_PER_GPU[family] * gpu).quantize(Decimal("0.0001"))
    vcpu = _SIZES[size]
    kind = family.split("-")[0]
    return vcpu, vcpu * _MEM_PER_VCPU[kind], 0, (_PRICE_PER_VCPU[kind] * vcpu).quantize(Decimal("0.0001"))


def _slots(vcpu: int, gpu: int) -> int:
    return max(4, 1024 // vcpu) if not gpu else max(3, 96 // vcpu)


def _scaled(slots: int, scale: float) -> int:
    return max(1, round(slots * scale))


def build_pools(region: str, max_reclaimable: int | None = None, slot_scale: float = 1.0) -> tuple[PoolSpec, ...]:
    """All pools of the region. ``max_reclaimable`` trims the reclaimable set evenly across halls; ``slot_scale``
    multiplies every pool's slots (a bigger region of the same shape: the fleet-scale simulation)."""
    reclaimable: list[PoolSpec] = []
    for suffix, families in _FAMILIES.items():
        for family, sizes in families.items():
            for size in sizes:
                for hall in HALLS:
                    vcpu, mem, gpu, price = _shape(family, size)
                    rate = (price * Decimal("0.35")).quantize(Decimal("0.0001"))
                    pool = Pool(pool_id=f"{region}-{hall}-{family}-{size}-rc", region=region, hall=hall,
                                aggregate=f"{hall}-agg-{suffix}", sku_family=family, size=size, vcpu=vcpu,
                                memory_gib=mem, gpu=gpu, purchase_model=PurchaseModel.RECLAIMABLE, rate_eur_h=rate,
                                guaranteed_rate_eur_h=price)
                    reclaimable.append(PoolSpec(pool, _scaled(_slots(vcpu, gpu), slot_scale)))
    if max_reclaimable is not None and max_reclaimable < len(reclaimable):
        if max_reclaimable < 1:
            raise ValueError(f"pools must be >= 1, got {max_reclaimable}")
        step = len(reclaimable) / max_reclaimable
        reclaimable = [reclaimable[int(i * step)] for i in range(max_reclaimable)]
    committed: list[PoolSpec] = []
    guaranteed: list[PoolSpec] = []
    for hall in HALLS:
        for family, size in (("std-g6", "xlarge"), ("hm-g6", "xlarge"), ("std-g7", "large"),
                             ("cc-g7", "xlarge"), ("gpu-a100", "4g")):
            vcpu, mem, gpu, price = _shape(family, size)
            agg = f"{hall}-agg-{'a' if family in _FAMILIES['a'] else 'b'}"
            for bu in BUSINESS_UNITS:
                committed.append(PoolSpec(Pool(
                    pool_id=f"{region}-{hall}-{family}-{size}-cm-{bu}", region=region, hall=hall, aggregate=agg,
                    sku_family=family, size=size, vcpu=vcpu, memory_gib=mem, gpu=gpu,
                    purchase_model=PurchaseModel.COMMITTED, rate_eur_h=price, guaranteed_rate_eur_h=price,
                    business_unit=bu), _scaled(2 if gpu else 12, slot_scale)))
            guaranteed.append(PoolSpec(Pool(
                pool_id=f"{region}-{hall}-{family}-{size}-gd", region=region, hall=hall, aggregate=agg,
                sku_family=family, size=size, vcpu=vcpu, memory_gib=mem, gpu=gpu,
                purchase_model=PurchaseModel.GUARANTEED, rate_eur_h=price, guaranteed_rate_eur_h=price),
                _scaled(8 if gpu else 200, slot_scale)))
    return (*reclaimable, *committed, *guaranteed)
