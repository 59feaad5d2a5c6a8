"""The worked example (hand-computable): workload ``etl``, one day (inside the 90-day history).

| line | inputs | EUR |
|---|---|---|
| reclaimable work | 10 instances × 24 h = 240 h on r1-h1-wx-large-rc at 0.14 (guaranteed 0.40) | 33.60 |
| floor | 2 instances × 24 h = 48 h on r1-h1-wx-large-cm-analytics at 0.40 | 19.20 |
| fallback | 1 instance × 5 h on r1-h1-wx-large-gd at 0.40 | 2.00 |
| warm headroom | 1 instance × 24 h on the reclaimable pool at 0.14 | 3.36 |
| checkpoint storage | 500 GiB × 24 h at 0.00005 EUR/GiB-h | 0.60 |
| orchestrator | 0.05 EUR an hour × 24 h, etl the only workload | 1.20 |
| costs | | 59.96 |
| counterfactual | (240 + 48 + 5) h × 0.40 = 117.20, minus wasted (3 × 30 min + 30 min) = 2 h × 0.40 = 0.80 | 116.40 |
| net saving | 116.40 − 59.96 | **56.44** |

The wasted work: three reclaims lose 30 minutes each, and one advisory that no reclaim followed (ADR-16) kept
half of a node drained and cordoned for an hour — 1,800 instance-seconds charged to etl, which opted in, as a
false-positive cost (0.5 h × 0.40 = 0.20, inside the wasted work, shown beside it).

Also: one hour lost to a workload defect (reported, 0.40, not charged); gross rate-card saving 240 h × 0.26 =
62.40; reclaimable hours 240, fallback hours 5.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from contracts.events import Event
from contracts.pools import Pool, PurchaseModel

# two days before this month began: inside the 90-day history and in a completed month (the archive's partition)
DAY = datetime.now(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0) - timedelta(days=2)
REGION = "r1"
RC, CM, GD = "r1-h1-wx-large-rc", "r1-h1-wx-large-cm-analytics", "r1-h1-wx-large-gd"
EXPECTED = {"counterfactual_eur": Decimal("116.40"), "costs_eur": Decimal("59.96"), "net_saving_eur": Decimal("56.44"),
            "reclaimable_eur": Decimal("33.60"), "floor_eur": Decimal("19.20"), "fallback_eur": Decimal("2.00"),
            "headroom_eur": Decimal("3.36"), "storage_eur": Decimal("0.60"), "orchestrator_eur": Decimal("1.20"),
            "gross_saving_eur": Decimal("62.40"), "wasted_eur": Decimal("0.80"), "defect_wasted_eur": Decimal("0.40"),
            "false_positive_eur": Decimal("0.20")}


def pools() -> list[Pool]:
    def pool(pid: str, model: PurchaseModel, rate: str, bu: str | None = None) -> Pool:
        return Pool(pool_id=pid, region=REGION, hall="h1", aggregate="h1-agg-wx", sku_family="wx", size="large",
                    vcpu=16, memory_gib=64, purchase_model=model, rate_eur_h=Decimal(rate),
                    guaranteed_rate_eur_h=Decimal("0.40"), business_unit=bu)
    return [pool(RC, PurchaseModel.RECLAIMABLE, "0.14"), pool(CM, PurchaseModel.COMMITTED, "0.40", "analytics"),
            pool(GD, PurchaseModel.GUARANTEED, "0.40")]


def _ev(kind: str, t: datetime, pool: str, instance: str, cause: str = "planned", **attrs: Any) -> dict[str, Any]:
    return Event(event_id=uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}/{instance}/{t.isoformat()}"), kind=kind,  # type: ignore[arg-type]
                 time=t, region=REGION, partition="k8s-a", pool=pool, instance=instance, workload="etl",
                 contract_version="etl@3", cause=cause, source="worked-example", attributes=attrs).row()


def events() -> list[dict[str, Any]]:
    end = DAY + timedelta(days=1)
    rows = []
    for i in range(10):
        rows.append(_ev("launched", DAY, RC, f"rc-{i}", purpose="work"))
        rows.append(_ev("terminated", end, RC, f"rc-{i}", "scale-down"))
    for i in range(2):
        rows.append(_ev("launched", DAY, CM, f"cm-{i}", purpose="floor"))
        rows.append(_ev("terminated", end, CM, f"cm-{i}", "scale-down"))
    rows.append(_ev("launched", DAY + timedelta(hours=8), GD, "gd-0", "fallback", purpose="fallback"))
    rows.append(_ev("terminated", DAY + timedelta(hours=13), GD, "gd-0", "fallback-returned"))
    rows.append(_ev("launched", DAY, RC, "hr-0", purpose="headroom"))
    rows.append(_ev("terminated", end, RC, "hr-0", "scale-down"))
    # three reclaims lose 30 minutes of work each (the instance is replaced at once: capacity is unchanged)
    for i, h in enumerate((3, 9, 17)):
        rows.append(_ev("lost", DAY + timedelta(hours=h, minutes=10), RC, f"rc-{i}", "reclaimed", wasted_s=1800))
    rows.append(_ev("lost", DAY + timedelta(hours=20), RC, "rc-5", "workload-defect-oom", wasted_s=3600))
    # the agent's record of an advisory that lapsed without a reclaim (agent/notice/advisory.py): half the node, an hour
    rows.append(_ev("advisory-lapsed", DAY + timedelta(hours=22), RC, "rc-7", "advisory-false-positive",
                    wasted_s=1800, cordoned_s=3600, node_share="0.5", drain_wasted_s=0))
    return rows


def storage_rows() -> list[tuple[datetime, str, Decimal, Decimal]]:
    return [(DAY + timedelta(hours=h), "etl", Decimal(500), Decimal("0.00005")) for h in range(24)]


def orchestrator_rows() -> list[tuple[datetime, str, Decimal]]:
    return [(DAY + timedelta(hours=h), REGION, Decimal("0.05")) for h in range(24)]
