"""The simulated region's economic assumptions in one place, with the planning rates beside them.

The region prices a reclaimable pool from its aggregate's utilisation, ``u = 0.7 × guaranteed demand's
utilisation + 0.3 × the share of the aggregate's room in use``: ``rate = guaranteed rate × (0.2 + 0.6 u²)``,
so an idle aggregate lends at 80 % off and a full one at 20 % off. Guaranteed demand follows a daily cycle
(±50 %, peak mid-afternoon UTC) and bursts (×4, 0.3 a day per aggregate, 90 min), and it is what reclaims:
a request lands in free room first and reclaims only what does not fit (``room_first``), at ≈ 4 % of
reclaimable instances an hour over the region. So in this model **price carries depth**: a cheap pool is a
pool whose aggregate is idle, which is the pool least likely to be reclaimed soon.

``price_demand`` weakens or inverts that: the utilisation that sets the price is
``price_demand × u + (1 − price_demand) × U_NOMINAL``, so 1 is the model above, 0 a price that says nothing
about demand, and −1 a price that is lowest where demand is highest (the case ADR-08's depth-first is for:
"a pool is cheap because guaranteed tenants are not using it yet; the forward calendar often shows they are
about to").

The planning figures the one-pager's targets were set with are the catalogue's: every reclaimable pool at 35 %
of its flavour's guaranteed rate (``PLANNING_RATE_SHARE``), ~4 %/h reclaimed, 2 % without notice — the replay
reports net saving under both the rate card and these planning rates.
"""

from __future__ import annotations

from decimal import Decimal

from .config import RegionConfig

__all__ = ["PLANNING_RATE_SHARE", "U_NOMINAL", "assumptions", "price_factor"]

PLANNING_RATE_SHARE = Decimal("0.35")  # the catalogue's reclaimable rate ÷ guaranteed rate (topology.py)
U_NOMINAL = 0.55  # the aggregates' mean utilisation (demand.GuaranteedDemand.utilisation)


def price_factor(utilisation: float, price_demand: float = 1.0) -> float:
    """The reclaimable rate as a share of the guaranteed rate: 0.2 when idle, 0.8 when full; ``price_demand``
    (−1..1) scales how much of the utilisation the price follows (see the module docstring)."""
    u = min(1.0, max(0.0, price_demand * utilisation + (1.0 - price_demand) * U_NOMINAL))
    return 0.2 + 0.6 * u * u


def assumptions(config: RegionConfig) -> list[tuple[str, str, str]]:
    """(what, the region model, the planning figure) rows: the one table the replay prints."""
    mean = price_factor(U_NOMINAL, config.price_demand)
    return [
        ("reclaimable rate", f"guaranteed × (0.2 + 0.6 u²), u from demand (price_demand {config.price_demand:g}); "
                             f"{mean:.0%} at the mean utilisation {U_NOMINAL}",
         f"{PLANNING_RATE_SHARE:.0%} of guaranteed"),
        ("reclaim rate", f"{config.reclaim_rate_pct_h:g} %/h of reclaimable instances, room-first, "
                         f"{config.hall_reclaims_per_30d:g} hall-wide reclaim / 30 d", "~4 %/h"),
        ("no-notice share", f"{config.no_notice_share:.0%}", "~2 %"),
        ("demand cycle", f"±{config.daily_amplitude:.0%} daily (peak 15:00 UTC), bursts ×{config.burst_factor:g} "
                         f"{config.bursts_per_aggregate_day:g}/aggregate/day", "—"),
        ("other tenants", f"{config.occupancy:.0%} of reclaimable slots", "—"),
    ]
