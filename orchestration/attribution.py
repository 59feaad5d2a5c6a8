"""Net-saving attribution (ADR-26): pure functions from one period's usage of one workload to a ledger line.

Net saving = useful work valued at the guaranteed rate (the counterfactual) − every spend: reclaimable
hours, floor hours on committed capacity, fallback hours, warm headroom, checkpoint storage and a pro-rata
share of the orchestrator's own footprint. Wasted work caused by reclaims is removed from useful work (so it
is counted once, never added as a cost). A false-positive advisory (ADR-16: the node drained and cordoned for
a reclaim that never came) is wasted work of the workload that opted in, removed the same way and reported
beside it as ``false_positive_hours``/``false_positive_eur`` (part of ``wasted_*``, not added to it). Work
lost to a workload's own defect is reported to the workload and not charged to reclaim: it stays in the
counterfactual, because guaranteed capacity would have lost it too. The depth premium (what preferring depth
over price cost, ADR-08) is reported, not added (it is already inside the reclaimable spend). The saving is
labelled "rate-card saving" until procurement buys less guaranteed capacity because of it.

Money is ``Decimal`` EUR, kept at 6 decimal places in the ledger; reports round to the cent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from decimal import ROUND_HALF_EVEN, Decimal
from typing import TypeVar

__all__ = ["LABEL", "LINES", "LedgerLine", "Loss", "Usage", "attribute", "cents", "ledger_costs", "net_saving",
           "orchestrator_shares"]

LABEL = "rate-card saving"
Q6 = Decimal("0.000001")
ZERO = Decimal(0)
PURPOSES = ("work", "floor", "fallback", "headroom")
LINES = ("reclaimable_eur", "floor_eur", "fallback_eur", "headroom_eur", "storage_eur", "orchestrator_eur")


# Money as the ledger counts it: Decimal EUR here, exact integer micro-euros in the polars frames.
Money = TypeVar("Money", int, Decimal)


def ledger_costs(lines: Mapping[str, Money], zero: Money) -> Money:
    """The ledger identity's costs: the sum of the six cost lines (``LINES``) of one ledger line or row."""
    return sum((lines[k] for k in LINES), zero)


def net_saving(counterfactual: Money, costs: Money) -> Money:
    """The ledger identity (ADR-26), its one definition: net saving = counterfactual − costs.

    ``attribute`` (Decimal), ``ledger_frames`` (integer micro-euros) and the ``Decimal`` cost rows call it; the
    test oracle and the dbt marts (``ledger_balances``) are tested against it.
    """
    return counterfactual - costs


def q6(x: Decimal) -> Decimal:
    """``x`` rounded half-even to 6 decimal places (the ledger's precision)."""
    return x.quantize(Q6, rounding=ROUND_HALF_EVEN)


def cents(x: Decimal) -> Decimal:
    """``x`` rounded half-even to the cent (what reports show)."""
    return x.quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)


@dataclass(frozen=True)
class Usage:
    """Instance-hours of one workload on one pool in the period.

    ``purchase_model``: reclaimable | committed | guaranteed. ``purpose``: work (useful), floor (committed
    work), fallback (guaranteed work beyond the floor), headroom (warm spare capacity, not useful work).
    """

    workload: str
    pool: str
    purchase_model: str
    purpose: str
    hours: Decimal
    rate_eur_h: Decimal
    guaranteed_rate_eur_h: Decimal
    depth_premium_eur_h: Decimal = ZERO

    def __post_init__(self) -> None:
        if self.hours < 0:
            raise ValueError(f"usage hours must be >= 0, got {self.hours} for {self.workload}/{self.pool}")
        if self.purpose not in PURPOSES:
            raise ValueError(f"usage purpose {self.purpose!r} unknown; use one of {', '.join(PURPOSES)}")

    @property
    def line(self) -> str:
        """The cost line this usage is charged to: headroom, fallback, floor or reclaimable."""
        if self.purpose == "headroom":
            return "headroom_eur"
        if self.purpose == "fallback" or self.purchase_model == "guaranteed":
            return "fallback_eur"
        if self.purpose == "floor" or self.purchase_model == "committed":
            return "floor_eur"
        return "reclaimable_eur"


@dataclass(frozen=True)
class Loss:
    """Work lost (instance-hours since the last good checkpoint). ``cause``: reclaim | defect | false-positive."""

    workload: str
    pool: str
    hours: Decimal
    guaranteed_rate_eur_h: Decimal
    cause: str = "reclaim"


@dataclass(frozen=True)
class LedgerLine:
    workload: str
    period: str
    instance_hours: Decimal
    useful_hours: Decimal
    counterfactual_eur: Decimal
    gross_saving_eur: Decimal          # rate-card difference × reclaimable work hours (the vendor-slide number)
    reclaimable_eur: Decimal
    floor_eur: Decimal
    fallback_eur: Decimal
    headroom_eur: Decimal
    storage_eur: Decimal
    orchestrator_eur: Decimal
    costs_eur: Decimal
    net_saving_eur: Decimal
    wasted_hours: Decimal
    wasted_eur: Decimal                # reclaim-caused, already removed from the counterfactual
    defect_wasted_hours: Decimal
    defect_wasted_eur: Decimal         # reported to the workload, not charged to reclaim
    depth_premium_eur: Decimal
    reclaimable_hours: Decimal
    fallback_hours: Decimal
    false_positive_hours: Decimal = ZERO   # part of wasted_hours: advisories no reclaim followed (ADR-16)
    false_positive_eur: Decimal = ZERO     # part of wasted_eur
    label: str = LABEL

    @property
    def net_pct(self) -> Decimal:
        """Net saving as a percentage of the counterfactual (0 without one)."""
        return (self.net_saving_eur / self.counterfactual_eur * 100) if self.counterfactual_eur else ZERO

    def as_dict(self) -> dict[str, object]:
        """The line's fields by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def attribute(workload: str, period: str, usage: Iterable[Usage], losses: Iterable[Loss] = (),
              storage_eur: Decimal = ZERO, orchestrator_eur: Decimal = ZERO) -> LedgerLine:
    """The ledger line of one workload for one period (an hour, a day, a month: hours are quantities)."""
    spend = dict.fromkeys(LINES, ZERO)
    work_value = useful = inst = gross = premium = reclaim_h = fallback_h = ZERO
    for u in usage:
        if u.workload != workload:
            continue
        cost = u.hours * u.rate_eur_h
        spend[u.line] += cost
        inst += u.hours
        premium += u.hours * u.depth_premium_eur_h
        if u.purpose != "headroom":
            useful += u.hours
            work_value += u.hours * u.guaranteed_rate_eur_h
        if u.line == "reclaimable_eur":
            gross += u.hours * (u.guaranteed_rate_eur_h - u.rate_eur_h)
            reclaim_h += u.hours
        if u.line == "fallback_eur":
            fallback_h += u.hours
    wasted_h = wasted_eur = defect_h = defect_eur = fp_h = fp_eur = ZERO
    for loss in losses:
        if loss.workload != workload:
            continue
        value = loss.hours * loss.guaranteed_rate_eur_h
        if loss.cause == "defect":
            defect_h += loss.hours
            defect_eur += value
        else:
            wasted_h += loss.hours
            wasted_eur += value
            if loss.cause == "false-positive":
                fp_h += loss.hours
                fp_eur += value
    spend["storage_eur"] = storage_eur
    spend["orchestrator_eur"] = orchestrator_eur
    spend = {k: q6(v) for k, v in spend.items()}
    counterfactual = q6(work_value - wasted_eur)
    costs = ledger_costs(spend, ZERO)
    return LedgerLine(
        workload=workload, period=period, instance_hours=q6(inst), useful_hours=q6(useful - wasted_h),
        counterfactual_eur=counterfactual, gross_saving_eur=q6(gross), reclaimable_eur=spend["reclaimable_eur"],
        floor_eur=spend["floor_eur"], fallback_eur=spend["fallback_eur"], headroom_eur=spend["headroom_eur"],
        storage_eur=spend["storage_eur"], orchestrator_eur=spend["orchestrator_eur"], costs_eur=costs,
        net_saving_eur=net_saving(counterfactual, costs), wasted_hours=q6(wasted_h), wasted_eur=q6(wasted_eur),
        defect_wasted_hours=q6(defect_h), defect_wasted_eur=q6(defect_eur), depth_premium_eur=q6(premium),
        reclaimable_hours=q6(reclaim_h), fallback_hours=q6(fallback_h), false_positive_hours=q6(fp_h),
        false_positive_eur=q6(fp_eur))


def orchestrator_shares(total_eur: Decimal, instance_hours: Mapping[str, Decimal]) -> dict[str, Decimal]:
    """Split the orchestrator's cost for a period pro rata to instance-hours; shares add up to the total
    exactly (the rounding remainder goes to the largest consumer)."""
    total_h = sum(instance_hours.values(), ZERO)
    if total_h <= 0 or total_eur == 0:
        return dict.fromkeys(instance_hours, ZERO)
    shares = {w: q6(total_eur * h / total_h) for w, h in instance_hours.items()}
    remainder = q6(total_eur) - sum(shares.values(), ZERO)
    if remainder:
        biggest = max(instance_hours, key=lambda w: (instance_hours[w], w))
        shares[biggest] += remainder
    return shares
