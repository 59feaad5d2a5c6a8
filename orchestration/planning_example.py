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

``planning_month`` is that arithmetic. ``fleet_month`` is the same month as a fleet and its lifecycle events
(the wasted work *generated* from ADR-20's reclaim assumptions, not taken as 2 %), which the test runs through
the ledger's own reader (``backfill.read_range``) and attribution: the figure it reports is computed from
events, not back-solved from the plan's totals (docs/analytics.md has both).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from contracts.cost_attributes import lost_work_s
from contracts.events import Event
from contracts.pools import Pool, PurchaseModel
from contracts.subjects import EventKind

from .attribution import LedgerLine, Loss, Usage, attribute

__all__ = ["INPUTS", "FleetMonth", "fleet_month", "planning_month"]

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
    """The worked planning example's month as one ledger line (``inputs`` override the defaults)."""
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


# ---------- the same month as events: the fleet the plan describes, run through the ledger's own reader ----------
RECLAIM_PCT_H = Decimal("4")            # ADR-20: 4 % of reclaimable instances reclaimed an hour
UNPROTECTED_SHARE = 0.035               # ADR-20: reclaims without a successful final write
INTERVAL_MIN = 60                       # ADR-20: the periodic checkpoint interval cap
INSTANCE_VCPU = 64
HOURS = 720


@dataclass(frozen=True)
class FleetMonth:
    """The plan's month as a fleet: pools, lifecycle events (rows for ``events``), storage and orchestrator rows."""

    pools: list[Pool]
    events: list[dict[str, Any]]
    storage: list[tuple[datetime, str, Decimal, Decimal]]
    orchestrator: list[tuple[datetime, str, Decimal]]
    wasted_s: int


def fleet_month(start: datetime, region: str = "rplan", seed: int = 1,
                inputs: dict[str, Decimal] | None = None) -> FleetMonth:
    """The month the plan describes, generated as events rather than solved for its totals.

    The shares of ``INPUTS`` size the fleet (64-vCPU instances, rounded to whole instances); the wasted work is
    not an input: every instance-hour of reclaimable work is reclaimed with probability 4 % (replaced at once),
    3.5 % of reclaims have no final checkpoint and lose the work since the last periodic one
    (``contracts.cost_attributes.lost_work_s``, a 60-minute interval). Storage and the orchestrator are
    charged hourly at the plan's monthly figures.
    """
    i = {**INPUTS, **(inputs or {})}
    g, r, work = i["guaranteed_rate"] * INSTANCE_VCPU, i["reclaimable_rate"] * INSTANCE_VCPU, i["work_vcpu_h"]
    per_h = work / HOURS / INSTANCE_VCPU

    def n(share: Decimal) -> int:
        return int((per_h * share).to_integral_value())

    pools = [_pool(region, "rc", PurchaseModel.RECLAIMABLE, r, g), _pool(region, "cm", PurchaseModel.COMMITTED, g, g),
             _pool(region, "gd", PurchaseModel.GUARANTEED, g, g)]
    rc, cm, gd = (p.pool_id for p in pools)
    end = start + timedelta(hours=HOURS)
    ev = _Events(region, start)
    for k in range(n(i["floor_share"])):
        ev.span(cm, f"cm-{k}", start, end, "floor")
    for k in range(n(i["fallback_share"])):
        ev.span(gd, f"gd-{k}", start, end, "fallback")
    for k in range(n(i["reclaimable_share"] * i["headroom_share_of_reclaimable"])):
        ev.span(rc, f"hr-{k}", start, end, "headroom")
    rng = random.Random(seed)
    p_reclaim = float(RECLAIM_PCT_H) / 100
    for k in range(n(i["reclaimable_share"])):
        name, born = f"rc-{k}", start
        ev.launch(rc, name, born, "work")
        for h in range(HOURS):
            if rng.random() >= p_reclaim:
                continue
            at = start + timedelta(hours=h, seconds=rng.uniform(0, 3600))
            final = rng.random() >= UNPROTECTED_SHARE
            lost = round(lost_work_s((at - born).total_seconds(), checkpoint_mode="final-on-notice+periodic",
                                     framework=None, interval_min=INTERVAL_MIN, max_unit_length_min=None,
                                     final_written=final))
            ev.end(rc, name, at, "reclaimed", lost)
            name, born = f"{name}.", at
            ev.launch(rc, name, born, "work")
        ev.end(rc, name, end, "scale-down", 0)
    gib = i["storage_gib_month"]
    storage = [(start + timedelta(hours=h), "fleet", gib, i["storage_eur_gib_month"] / HOURS) for h in range(HOURS)]
    orch = [(start + timedelta(hours=h), region, i["orchestrator_eur"] / HOURS) for h in range(HOURS)]
    return FleetMonth(pools, ev.rows, storage, orch, ev.wasted_s)


def _pool(region: str, kind: str, model: PurchaseModel, rate: Decimal, guaranteed: Decimal) -> Pool:
    return Pool(pool_id=f"{region}-h1-std-4xl-{kind}", region=region, hall="h1", aggregate="h1-agg-a",
                sku_family="std", size="4xl", vcpu=INSTANCE_VCPU, memory_gib=4 * INSTANCE_VCPU, purchase_model=model,
                rate_eur_h=rate, guaranteed_rate_eur_h=guaranteed,
                business_unit="analytics" if model is PurchaseModel.COMMITTED else None)


@dataclass
class _Events:
    region: str
    start: datetime
    rows: list[dict[str, Any]] = field(default_factory=list)
    wasted_s: int = 0

    def _ev(self, kind: str, t: datetime, pool: str, instance: str, cause: str, **attrs: Any) -> None:
        self.rows.append(Event(event_id=uuid.uuid5(uuid.NAMESPACE_URL, f"{self.region}/{kind}/{instance}"),
                               kind=EventKind(kind), time=t, region=self.region, partition="plan", pool=pool,
                               instance=instance, workload="fleet", contract_version="fleet@1", cause=cause,
                               source="planning-example", attributes=attrs).row())

    def launch(self, pool: str, instance: str, t: datetime, purpose: str) -> None:
        self._ev("launched", t, pool, instance, "planned", purpose=purpose)

    def end(self, pool: str, instance: str, t: datetime, cause: str, wasted_s: int) -> None:
        if wasted_s:
            self._ev("lost", t, pool, instance, cause, wasted_s=wasted_s)
            self.wasted_s += wasted_s
        self._ev("terminated", t, pool, instance, cause)

    def span(self, pool: str, instance: str, t0: datetime, t1: datetime, purpose: str) -> None:
        self.launch(pool, instance, t0, purpose)
        self.end(pool, instance, t1, "scale-down", 0)
