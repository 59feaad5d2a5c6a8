"""ADR-26's planning example as a synthetic month with documented inputs, run through ``attribute``.

The one-pager plans €199k a month net of €335k counterfactual (59 %), with the orchestrator at 1.6 % of the
saving. These inputs (all per normalised vCPU-hour, a 30-day month of 720 hours) reproduce it:

| input | value | why |
|---|---|---|
| work delivered | 8,530,000 vCPU-h (≈ 11,850 vCPU all month) | the 12,000–40,000 vCPU estate's eligible share |
| guaranteed rate | €0.040 / vCPU-h | the guaranteed rate card (std SKU) |
| reclaimable rate | €0.012 / vCPU-h (30 % of guaranteed) | the reclaimable rate card |
| on reclaimable pools | 90 % of work | discount share ≥ 70 % target |
| floor on committed capacity | 7 % of work, at the guaranteed rate | tier-1/2 floors (ADR-22) |
| fallback on guaranteed capacity | 3 % of work, at the guaranteed rate | ADR-23 |
| wasted work (reclaim) | 2 % of reclaimable hours, removed from useful work | ≤ 3 % target (ADR-20) |
| warm headroom | 4 % of reclaimable hours, at the reclaimable rate | replacement ≤ 20 s warm |
| checkpoint storage | 145,000 GiB-month at €0.02 | three generations per workload (ADR-19) |
| orchestrator | €3,200 for the month | its share of shared ClickHouse, Kafka, Prometheus and agents |

Result: counterfactual €335,058; costs €136,029; net €199,029 (59.4 %); orchestrator 1.61 % of the net.
"""

from __future__ import annotations

from decimal import Decimal

from .attribution import LedgerLine, Loss, Usage, attribute

__all__ = ["INPUTS", "planning_month"]

INPUTS: dict[str, Decimal] = {
    "work_vcpu_h": Decimal("8530000"),
    "guaranteed_rate": Decimal("0.040"),
    "reclaimable_rate": Decimal("0.012"),
    "reclaimable_share": Decimal("0.90"),
    "floor_share": Decimal("0.07"),
    "fallback_share": Decimal("0.03"),
    "wasted_share_of_reclaimable": Decimal("0.02"),
    "headroom_share_of_reclaimable": Decimal("0.04"),
    "storage_gib_month": Decimal("145000"),
    "storage_eur_gib_month": Decimal("0.02"),
    "orchestrator_eur": Decimal("3200"),
}


def planning_month(inputs: dict[str, Decimal] | None = None) -> LedgerLine:
    i = {**INPUTS, **(inputs or {})}
    g, r, work = i["guaranteed_rate"], i["reclaimable_rate"], i["work_vcpu_h"]
    reclaimable_h = work * i["reclaimable_share"]
    usage = [
        Usage("fleet", "reclaimable", "reclaimable", "work", reclaimable_h, r, g),
        Usage("fleet", "committed", "committed", "floor", work * i["floor_share"], g, g),
        Usage("fleet", "guaranteed", "guaranteed", "fallback", work * i["fallback_share"], g, g),
        Usage("fleet", "reclaimable", "reclaimable", "headroom", reclaimable_h * i["headroom_share_of_reclaimable"],
              r, g),
    ]
    losses = [Loss("fleet", "reclaimable", reclaimable_h * i["wasted_share_of_reclaimable"], g, "reclaim")]
    storage = i["storage_gib_month"] * i["storage_eur_gib_month"]
    return attribute("fleet", "2026-09", usage, losses, storage_eur=storage, orchestrator_eur=i["orchestrator_eur"])
