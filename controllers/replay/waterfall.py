"""Where the saving goes (ADR-26): from the ceiling the floors allow down to the achieved net, item by item.

All figures are shares of ``V``, the guaranteed value of the work the claims wanted (unit-hours wanted × the
cheapest guaranteed price of a unit), at the planning rates. The **ceiling** is what these claims could save with
nothing lost: each workload's floor share bought at the guaranteed rate, the rest of its work on reclaimable
capacity at the planning share of the guaranteed rate, every claim whole and perfectly packed. The achieved net is
``useful work at the guaranteed rate − floor − fallback − reclaimable spend`` (``WorkloadOutcome``), and the gap
between the two splits exactly into:

- **floor**: what the floor cost beyond its share of the work at the guaranteed rate (whole instances, floor
  units short or beyond the share);
- **fallback spend**: guaranteed hours bought for work the ceiling had on reclaimable capacity, less what those
  hours would have cost there;
- **shortfall**: the saving the work not delivered would have made;
- **wasted work**: work redone, at the guaranteed rate (removed from useful work, ADR-26);
- **surplus and make-before-break overlap**: reclaimable instances held beyond the plan's instances in their pool
  (replacements launched before the instances they replace go, surplus the breaker paces out);
- **depth premium**: ADR-08's recorded premium over price-first under the same caps (rate card, scaled to the
  planning rates), inside the reclaimable spend;
- **fit and pool rates**: the rest of the reclaimable spend beyond the planning share of the work it did: units an
  instance leaves unused, pools dearer than the planning share.

**Replacement** boots, checkpoint **storage** and the **orchestrator**'s share are listed as what the replay does
not model (0 here: no boot time; no storage or footprint lines), so that the table says so instead of omitting
them. Pure; Decimal arithmetic, floats out.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from contracts.bakeoff import WATERFALL_POINTS

from .engine import WorkloadOutcome

__all__ = ["ITEMS", "NOT_MODELLED", "waterfall"]

ITEMS = tuple(WATERFALL_POINTS)   # the record a bake-off stores names the same items
NOT_MODELLED = ("replacement", "storage", "orchestrator")


def waterfall(outcomes: Mapping[str, WorkloadOutcome], floor_pct: Mapping[str, int],
              planning_share: Decimal) -> dict[str, float]:
    """``ceiling``, each of ``ITEMS`` and ``NOT_MODELLED`` (points of ``V`` the item takes) and ``net``.

    ``floor_pct``: each workload's declared floor share; ``planning_share``: the planning rate's share of the
    guaranteed rate. ``ceiling − sum(items) == net`` to rounding.
    """
    s = planning_share
    value = ceiling = Decimal(0)
    items = dict.fromkeys(ITEMS, Decimal(0))
    net = Decimal(0)
    for name, o in outcomes.items():
        g = o.guaranteed_rate_per_unit
        if not o.wanted_s or not g:
            continue
        hours = Decimal(1) / 3600
        v = Decimal(o.wanted_s) * hours * g
        f = Decimal(min(100, floor_pct.get(name, 0))) / 100
        worked_r, worked_fb = Decimal(o.reclaimable_s) * hours * g, Decimal(o.fallback_s) * hours * g
        floor_done = Decimal(o.delivered_s - o.reclaimable_s - o.fallback_s) * hours * g
        value += v
        ceiling += v * (1 - f) * (1 - s)
        items["floor"] += o.floor_cost - v * f * (1 - s) - s * floor_done
        items["fallback spend"] += o.fallback_cost - s * worked_fb
        items["shortfall"] += Decimal(o.shortfall_s) * hours * g * (1 - s)
        items["wasted work"] += Decimal(o.wasted_s) * hours * g
        beyond = o.reclaimable_cost_planning - s * worked_r
        scale = o.reclaimable_cost_planning / o.reclaimable_cost if o.reclaimable_cost else Decimal(0)
        premium = o.depth_premium * scale
        items["surplus and make-before-break overlap"] += o.surplus_cost_planning
        items["depth premium"] += premium
        items["fit and pool rates"] += beyond - o.surplus_cost_planning - premium
        net += Decimal(o.useful_unit_seconds) * hours * g - o.floor_cost - o.fallback_cost - o.reclaimable_cost_planning
    if not value:
        return {}
    out = {"ceiling": float(100 * ceiling / value)}
    out.update({k: float(100 * x / value) for k, x in items.items()})
    out.update(dict.fromkeys(NOT_MODELLED, 0.0))
    out["net"] = float(100 * net / value)
    return out
