"""Checkpoint arithmetic of ADR-20: the periodic interval as a loss budget (Young–Daly)."""

from __future__ import annotations

import math
from decimal import Decimal

__all__ = ["final_write_seconds", "mtbf_unprotected_hours", "requeue_waste_pct", "young_daly_hours"]


def mtbf_unprotected_hours(reclaim_rate_pct_h: Decimal, unprotected_share_pct: Decimal) -> float:
    """Mean time between losses that no final checkpoint protects.

    4 %/h × 3.5 % → 0.14 %/h → about 714 h; with 10 % unprotected → 0.4 %/h → 250 h.
    """
    rate = float(reclaim_rate_pct_h) / 100 * float(unprotected_share_pct) / 100
    return math.inf if rate <= 0 else 1.0 / rate


def young_daly_hours(checkpoint_cost_s: float, mtbf_hours: float) -> float:
    """The Young–Daly optimum √(2 · C · MTBF), in hours (C = 45 s, MTBF = 714 h → ≈ 4.2 h)."""
    return math.sqrt(2.0 * (checkpoint_cost_s / 3600.0) * mtbf_hours)


def final_write_seconds(size_gib: Decimal, throughput_mib_s: Decimal, overhead_s: int) -> float:
    """Seconds to write a final checkpoint of ``size_gib`` GiB at ``throughput_mib_s`` MiB/s, plus ``overhead_s``."""
    return float(size_gib) * 1024.0 / float(throughput_mib_s) + overhead_s


def requeue_waste_pct(rate_pct_h: Decimal, unit_length_min: int) -> float:
    """Expected wasted work of a requeued unit: rate × length ÷ 2 (half a unit is lost on average)."""
    return float(rate_pct_h) * (unit_length_min / 60.0) / 2.0
