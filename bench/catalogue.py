"""A deterministic synthetic pool catalogue (the example repository's pools.csv and the benchmarks' input).

`python -m bench.catalogue --out deploy/contracts/pools.csv` regenerates the example file. One region
``r1``, three halls with two host aggregates each, twelve SKU families (hardware generations, high-memory,
compute, AMD, Arm, two GPU families) in their sizes → 141 reclaimable pools, the same flavours as on-demand
guaranteed pools, plus committed pools per business unit in every hall.
Rates: guaranteed €0.04 per vCPU-hour (+ €2.40 per GPU-hour); reclaimable
pools at 25–70 % of it, a few at ≥ 85 % (not discount pools); observed interruption 1–7 %/h.
"""

from __future__ import annotations

import argparse
import csv
import random
from decimal import Decimal
from pathlib import Path

FAMILIES: dict[str, tuple[list[tuple[str, int, int]], int]] = {
    # family: ([(size, vcpu, memory_gib)], gpus per instance)
    "std-g5": ([("small", 4, 16), ("medium", 8, 32), ("large", 16, 64), ("xlarge", 32, 128)], 0),
    "std-g6": ([("small", 4, 16), ("medium", 8, 32), ("large", 16, 64), ("xlarge", 32, 128),
                ("2xlarge", 64, 256)], 0),
    "std-g7": ([("small", 4, 16), ("medium", 8, 32), ("large", 16, 64), ("xlarge", 32, 128),
                ("2xlarge", 64, 256)], 0),
    "hm-g5": ([("medium", 8, 64), ("large", 16, 128), ("xlarge", 32, 256), ("2xlarge", 64, 512)], 0),
    "hm-g6": ([("medium", 8, 64), ("large", 16, 128), ("xlarge", 32, 256), ("2xlarge", 64, 512)], 0),
    "cc-g6": ([("medium", 8, 16), ("large", 16, 32), ("xlarge", 32, 64), ("2xlarge", 64, 128)], 0),
    "cc-g7": ([("medium", 8, 16), ("large", 16, 32), ("xlarge", 32, 64), ("2xlarge", 64, 128)], 0),
    "amd-g4": ([("medium", 8, 32), ("large", 16, 64), ("xlarge", 32, 128), ("2xlarge", 64, 256)], 0),
    "amd-g5": ([("medium", 8, 32), ("large", 16, 64), ("xlarge", 32, 128), ("2xlarge", 64, 256)], 0),
    "arm-g1": ([("medium", 8, 32), ("large", 16, 64), ("xlarge", 32, 128), ("2xlarge", 64, 256)], 0),
    "gpu-a100": ([("1g", 16, 128), ("4g", 64, 512)], 1),
    "gpu-l40": ([("1g", 16, 96), ("2g", 32, 192), ("4g", 64, 384)], 1),
}
HALLS = ("h1", "h2", "h3")
BUSINESS_UNITS = ("analytics", "research", "engineering", "commerce", "platform")
COLUMNS = ("pool_id", "region", "hall", "aggregate", "sku_family", "size", "vcpu", "memory_gib", "gpu",
           "purchase_model", "rate_eur_h", "guaranteed_rate_eur_h", "interruption_rate_pct_h", "business_unit")


def guaranteed_rate(vcpu: int, gpus: int) -> Decimal:
    return (Decimal("0.04") * vcpu + Decimal("2.40") * gpus).quantize(Decimal("0.0001"))


def rows(seed: int = 7, region: str = "r1") -> list[dict[str, object]]:
    rng = random.Random(seed)
    out: list[dict[str, object]] = []
    for family, (sizes, gpu_factor) in FAMILIES.items():
        for size, vcpu, mem in sizes:
            gpus = gpu_factor * (4 if size == "4g" else 2 if size == "2g" else 1) if gpu_factor else 0
            for h_index, hall in enumerate(HALLS):
                aggregate = f"{hall}-agg-{'ab'[(hash_family(family) + h_index) % 2]}"
                g = guaranteed_rate(vcpu, gpus)
                share = Decimal(str(round(rng.uniform(0.25, 0.70), 2)))
                if rng.random() < 0.05:
                    share = Decimal(str(round(rng.uniform(0.86, 0.95), 2)))
                rate = (g * share).quantize(Decimal("0.0001"))
                interruption = Decimal(str(round(rng.uniform(1.0, 7.0), 2)))
                out.append({"pool_id": f"{region}-{hall}-{family}-{size}-rc", "region": region, "hall": hall,
                            "aggregate": aggregate, "sku_family": family, "size": size, "vcpu": vcpu,
                            "memory_gib": mem, "gpu": gpus, "purchase_model": "reclaimable",
                            "rate_eur_h": rate, "guaranteed_rate_eur_h": g,
                            "interruption_rate_pct_h": interruption, "business_unit": ""})
                out.append({"pool_id": f"{region}-{hall}-{family}-{size}-gd", "region": region, "hall": hall,
                            "aggregate": aggregate, "sku_family": family, "size": size, "vcpu": vcpu,
                            "memory_gib": mem, "gpu": gpus, "purchase_model": "guaranteed",
                            "rate_eur_h": g, "guaranteed_rate_eur_h": g,
                            "interruption_rate_pct_h": Decimal(0), "business_unit": ""})
    for bu in BUSINESS_UNITS:
        for hall in HALLS:
            for family, size, vcpu, mem, gpus in (("std-g6", "xlarge", 32, 128, 0), ("hm-g6", "xlarge", 32, 256, 0),
                                                  ("gpu-a100", "4g", 64, 512, 4)):
                g = guaranteed_rate(vcpu, gpus)
                out.append({"pool_id": f"{region}-{hall}-{family}-{size}-cm-{bu}", "region": region, "hall": hall,
                            "aggregate": f"{hall}-agg-a", "sku_family": family, "size": size, "vcpu": vcpu,
                            "memory_gib": mem, "gpu": gpus, "purchase_model": "committed",
                            "rate_eur_h": g, "guaranteed_rate_eur_h": g, "interruption_rate_pct_h": Decimal(0),
                            "business_unit": bu})
    return out


def hash_family(family: str) -> int:
    return sum(ord(ch) for ch in family)


def write(path: Path, seed: int = 7) -> int:
    data = rows(seed)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(data)
    return len(data)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=7)
    a = parser.parse_args()
    print(f"wrote {write(a.out, a.seed)} pools to {a.out}")
