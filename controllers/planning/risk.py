"""What a reclaim costs a workload, and how likely one is: the inputs of expected-cost placement (ADR-08, ADR-20).

A reclaimable unit-hour in pool *i* costs its rate per unit, plus the chance the unit is reclaimed within the hour
times what a reclaim costs *that* workload::

    expected cost per unit-hour = (rate_i + p_i × L × g_i) / k_i

``k_i`` units an instance, ``g_i`` the pool's guaranteed rate (what the lost work is worth: ADR-26 removes wasted
work from useful work valued at the guaranteed rate), ``p_i`` the probability an instance placed now is reclaimed
within an hour, and ``L`` the hours of the workload's work one reclaim costs (``interruption_hours``): the work
lost since its last checkpoint, the replacement's start and the drain.

``p_i`` is the forecast the ranking publishes (``PoolState.reclaim_p_1h``) when there is one. Until then it is a
baseline computed from what the ranking already stores with every pool (its reclaims and instance-hours over the
window): each pool's rate shrunk towards its correlation group's, and the group's towards the region's
(``baseline_reclaim_p``, a gamma–Poisson estimate). A pool nobody held has no evidence of calm: a raw rate of
zero there ranked never-used pools as the safest (``bench.depth_signals``: "calm alone" picked pools reclaimed
1.7× as often as the cheapest), so it takes its group's rate, which is where reclaims come from in a room-first
region (a guaranteed request reclaims what its aggregate cannot hold).

Standard library only; pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from contracts.cost_attributes import FINAL_MODES, MODE_NONE, REQUEUE_FRAMEWORK
from contracts.schema import Contract

__all__ = ["NO_FINAL_SHARE", "PRIOR_HOURS", "REPLACEMENT_S", "baseline_reclaim_p", "expected_rate_pct_h",
           "interruption_hours", "p_from_rate", "weight_of"]

# ADR-20's planning assumption: 3.5 % of reclaims end without a good final write (no notice, overrun, failure)
NO_FINAL_SHARE = 0.035
# the one-pager's cold replacement (notice to serving): the reclaimed unit's work waits this long for its successor
REPLACEMENT_S = 180.0
# the instance-hours of evidence a pool's own rate weighs against its group's (and a group's against the region's)
PRIOR_HOURS = 200.0


def p_from_rate(rate_per_instance_hour: float, horizon_h: float = 1.0) -> float:
    """P(at least one reclaim within ``horizon_h``) at a constant rate (reclaims per instance-hour)."""
    return 1.0 - math.exp(-max(0.0, rate_per_instance_hour) * horizon_h)


def baseline_reclaim_p(exposure: Mapping[str, tuple[float, float]], groups: Mapping[str, str],
                       prior_hours: float = PRIOR_HOURS) -> dict[str, float]:
    """P(reclaim within 1 h) per pool from ``exposure`` (pool -> (reclaims, instance-hours) over the window).

    The pool's rate is ``(reclaims + m × group rate) / (hours + m)`` and the group's likewise on the region's
    rate (``m`` = ``prior_hours``): a pool with much history keeps its own rate, one with none takes its
    group's. ``groups``: pool -> correlation group (a pool in none is its own group).
    """
    total_r = sum(r for r, _ in exposure.values())
    total_h = sum(h for _, h in exposure.values())
    region = total_r / total_h if total_h > 0 else 0.0
    per_group: dict[str, list[float]] = {}
    for pool, (r, h) in exposure.items():
        g = per_group.setdefault(groups.get(pool, pool), [0.0, 0.0])
        g[0] += r
        g[1] += h
    group_rate = {g: (r + prior_hours * region) / (h + prior_hours) for g, (r, h) in per_group.items()}
    out = {}
    for pool, (r, h) in exposure.items():
        prior = group_rate[groups.get(pool, pool)]
        out[pool] = round(p_from_rate((r + prior_hours * prior) / (h + prior_hours)), 6)
    return out


def interruption_hours(contract: Contract) -> float:
    """The hours of the workload's work one reclaim costs on average, by its contract (ADR-20's rule).

    Work lost: half the checkpoint interval for a periodic checkpoint; with a final write on notice, only when
    that write does not happen (``NO_FINAL_SHARE``); half the unit length for requeued work; nothing for
    stateless work. Then the replacement's start (``REPLACEMENT_S``) and the drain budget, during which the unit
    does no work. The same cases as the agent's ``lost_work_s``.
    """
    mode, interval, unit = contract.checkpoint_mode, contract.checkpoint_interval_min, contract.max_unit_length_min
    if contract.framework == REQUEUE_FRAMEWORK or mode == MODE_NONE:  # StrEnums: compared as their strings
        lost = unit / 120.0 if unit is not None else 0.0
    else:  # since the last periodic checkpoint; no interval: ADR-20's default of 60 min (or the unit's length)
        exposed = interval / 120.0 if interval is not None else unit / 120.0 if unit is not None else 0.5
        lost = NO_FINAL_SHARE * exposed if mode in FINAL_MODES else exposed
    return lost + (REPLACEMENT_S + contract.drain_budget_s) / 3600.0


def weight_of(contract: Contract) -> float:
    """``interruption_hours`` on a grid of steps of √2 (…, 0.0625, 0.088, 0.125, …, 1, 1.41, 2 h).

    The weight the planner ranks a workload's pools with. The estimate is not finer than that (its replacement and
    no-final-write figures are planning assumptions), and workloads whose weights fall on one step share one
    ranking and its fills (``tables.PoolTable.reclaimable_at``).
    """
    hours = interruption_hours(contract)
    return 2.0 ** (round(2.0 * math.log2(hours)) / 2.0) if hours > 0 else 0.0


def expected_rate_pct_h(placed: Mapping[int, int], p: list[float]) -> float:
    """The expected share of ``placed``'s units (pool row -> units) reclaimed within an hour, in %/h."""
    units, reclaimed = 0, 0.0
    for i, n in placed.items():  # a loop, not two generators: the planner asks it once a claim
        units += n
        reclaimed += n * p[i]
    return 100.0 * reclaimed / units if units else 0.0
