"""Diagnostic: which depth signal picks the calmest pool in the simulated region?

    .venv/bin/python -m bench.depth_signals [--seed 1] [--days 14] [--horizon-h 2]

The region is recorded as the replay records it (room-first, ~4 %/h, 7 days of warm-up, cached like
``bench.replay_compare``). At every 5-minute rate card of the replayed days each selector picks the one
reclaimable pool it ranks first among those with free room; the share of that pool's instances reclaimed in the
next ``--horizon-h`` hours is averaged over the cards. Selectors: the cheapest price (the baseline, measured in
the same run: single-cheapest's pick), the pool's own free share (the production scorer's depth input, here
without the forward calendar), its host aggregate's free share in vCPU (``aggregate_shares``), the composite
score (ADR-07's weights: 0.4 depth, 0.4 calm from the reclaims seen so far, 0.2 cheap) with either depth, and calm
alone. Each is printed as its mean share and its ratio to the baseline; exit 1 when no card could be scored.
"""

from __future__ import annotations

import argparse
import bisect
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from contracts.scoring import WEIGHTS, WORST_INTERRUPTION_PCT_H

from .replay_trace import recorded_trace

BASELINE = "cheapest price (single-cheapest)"


def aggregate_shares(pools: dict[str, Any], capacity: dict[str, int], free: dict[str, int]) -> dict[str, float]:
    """Each pool's host aggregate's free share, weighed in vCPU."""
    room: dict[str, float] = defaultdict(float)
    total: dict[str, float] = defaultdict(float)
    for pid, p in pools.items():
        room[p.aggregate] += free.get(pid, 0) * p.vcpu
        total[p.aggregate] += capacity[pid] * p.vcpu
    return {pid: room[p.aggregate] / total[p.aggregate] if total[p.aggregate] else 0.0 for pid, p in pools.items()}


def _selectors(pools: dict[str, Any], cap: dict[str, int], free: dict[str, int], rates: dict[str, Any],
               calm: Callable[[str], float]) -> dict[str, Callable[[str], float]]:
    """Each selector as a key to maximise over the candidate pools."""
    agg = aggregate_shares(pools, cap, free)

    def price(p: str) -> float:
        return float(rates[p]) / float(pools[p].guaranteed_rate_eur_h)

    def own(p: str) -> float:
        return free.get(p, 0) / cap[p] if cap[p] else 0.0

    def composite(depth: Callable[[str], float]) -> Callable[[str], float]:
        return lambda p: WEIGHTS["depth"] * depth(p) + WEIGHTS["calm"] * calm(p) + WEIGHTS["cheap"] * (1 - price(p))
    return {BASELINE: lambda p: -price(p), "the pool's own free share": own,
            "its aggregate's free share (vCPU)": agg.__getitem__, "composite, the pool's own depth": composite(own),
            "composite, the aggregate's depth": composite(agg.__getitem__), "calm alone": calm}


def measure(trace: Any, days: float, horizon: timedelta) -> tuple[int, dict[str, float]]:
    """(cards scored, selector -> mean share of its pick reclaimed within ``horizon``)."""
    pools = {p.pool_id: p for p in trace.pools if str(p.purchase_model) == "reclaimable"}
    reclaims = [r for r in trace.reclaims if not r.drill and r.pool_id in pools]
    times = [r.time for r in reclaims]
    frees = dict(trace.free)
    seen: dict[str, float] = defaultdict(float)
    hours: dict[str, float] = defaultdict(float)
    total: dict[str, float] = defaultdict(float)
    cards, nxt, end = 0, 0, trace.start + timedelta(days=days)
    for t, rates in trace.rate_cards:
        free = frees.get(t)
        if free is None:
            continue
        while nxt < len(reclaims) and reclaims[nxt].time < t:
            seen[reclaims[nxt].pool_id] += reclaims[nxt].share
            nxt += 1
        for p in pools:
            hours[p] += (trace.capacity[p] - free.get(p, 0)) / 12
        if not trace.start <= t < end:
            continue
        candidates = [p for p in pools if free.get(p, 0) > 0 and p in rates]
        if not candidates:
            continue

        def calm(p: str) -> float:
            rate = 100 * seen[p] / hours[p] if hours[p] else 0.0
            return 1 - min(1.0, rate / WORST_INTERRUPTION_PCT_H)
        hit: dict[str, float] = defaultdict(float)
        for r in reclaims[bisect.bisect_left(times, t):bisect.bisect_left(times, t + horizon)]:
            hit[r.pool_id] += r.share
        for name, key in _selectors(pools, trace.capacity, free, rates, calm).items():
            total[name] += hit[max(candidates, key=key)]
        cards += 1
    return cards, {k: v / cards for k, v in total.items()} if cards else {}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.depth_signals", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--days", type=float, default=14.0)
    parser.add_argument("--horizon-h", type=float, default=2.0)
    parser.add_argument("--cache", type=Path, default=None,
                        help="the replay cache's directory (default: controllers.replay.disk_cache.cache_dir())")
    args = parser.parse_args(argv)
    start = datetime(2026, 10, 1, tzinfo=UTC)
    trace = recorded_trace(args.seed, args.days, 7.0, start, 4.0, 1.0, args.cache)
    cards, means = measure(trace, args.days, timedelta(hours=args.horizon_h))
    if not cards or means.get(BASELINE, 0.0) <= 0:
        print("FAIL: no rate card could be scored, or the baseline's pick was never reclaimed", file=sys.stderr)
        return 1
    base = means[BASELINE]
    print(f"seed {args.seed}, {args.days:g} days, {cards:,} rate cards: the share of the one pool each selector "
          f"picks that is reclaimed within {args.horizon_h:g} h (ratio to {BASELINE})")
    for name, mean in sorted(means.items(), key=lambda kv: kv[1]):
        print(f"  {name:<36} {100 * mean:7.3f} %   {mean / base:5.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
