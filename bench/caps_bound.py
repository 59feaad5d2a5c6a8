"""Diagnostic: can any placement within ADR-06's caps be interrupted less than single-cheapest?

    .venv/bin/python -m bench.caps_bound [--seeds 1 2 3 4] [--days 30] [--horizon-h 2]

The 30-day comparison asks ours (depth-first, within the caps: ≤ 15 % of a workload's units in a pool, ≤ 30 % in
a correlation group — a host aggregate here — and ≤ 40 % in a hall) to be interrupted less per hour than
single-cheapest, which puts a workload's every unit in its one cheapest pool. The simulated region has 6 host
aggregates in 3 halls, so the caps put every workload in at least 4 aggregates and 7 pools.

This bench bounds what the caps allow, on the traces ``bench.replay_compare`` records (room-first, ~4 %/h,
cached alike). At every 5-minute rate card of the replayed days, for each workload of ``deploy/contracts`` (its
eligible reclaimable pools with room on the card), it measures the share of a unit reclaimed within the next
``--horizon-h`` hours (a pool's reclaimed share over that window, weighed by the mix) for:

- **single-cheapest** (the baseline, measured in the same run): every unit in the cheapest pool;
- **capped oracle**: the mix within the caps with the least reclaimed share *knowing the reclaims to come* —
  a lower bound for every capped strategy that re-plans no more often than the horizon (moves cost nothing
  here, room is not limited, hall-wide reclaims count);
- **capped price-first**: the mix within the caps filled cheapest-first;
- **capped aggregate room** / **capped pool room**: filled deepest-first by the free share of the pool's host
  aggregate (in vCPU) or of the pool itself (the production score's depth input, here without the forward
  calendar), cheapest first among equals — what a depth signal can reach within the caps, before our own
  launches crowd the pools it prefers (which this bench does not model).

Printed per seed and over the seeds: the mean share of each, and the oracle's ratio to single-cheapest. A ratio
above 1 means that no strategy within the caps can be interrupted less than single-cheapest on that trace: the
caps, not the ranking, decide that row of the comparison. Exit 1 when no card could be scored.
"""

from __future__ import annotations

import argparse
import bisect
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .depth_signals import aggregate_shares
from .replay_trace import recorded_trace

POOL_SHARE, GROUP_SHARE, HALL_SHARE = 0.15, 0.30, 0.40   # controllers.planning.Caps' defaults (ADR-06)
STRATEGIES = ("single-cheapest", "capped oracle", "capped price-first", "capped aggregate room", "capped pool room")


@dataclass(frozen=True)
class Slot:
    """An eligible pool as the caps see it."""

    pool: str
    group: str
    hall: str


def capped_fill(order: Iterable[Slot], pool_share: float = POOL_SHARE, group_share: float = GROUP_SHARE,
                hall_share: float = HALL_SHARE) -> dict[str, float]:
    """The mix (pool -> share of the units) that fills ``order`` first-to-last, each pool as far as its own cap
    and its group's and hall's remaining caps allow, until the whole claim is placed (or the caps are spent).
    The caps nest (pools in groups in halls), so for a linear cost this greedy fill in ascending cost is the
    optimum. The hall cap applies only when the eligible pools span three halls or more (as the planner's)."""
    slots = list(order)
    hall_cap = hall_share if len({s.hall for s in slots}) >= 3 else 1.0
    group_left: dict[str, float] = defaultdict(lambda: group_share)
    hall_left: dict[str, float] = defaultdict(lambda: hall_cap)
    mix: dict[str, float] = {}
    left = 1.0
    for s in slots:
        take = min(pool_share, group_left[s.group], hall_left[s.hall], left)
        if take <= 1e-12:
            continue
        mix[s.pool] = take
        group_left[s.group] -= take
        hall_left[s.hall] -= take
        left -= take
        if left <= 1e-12:
            break
    return mix


def reclaimed(mix: Mapping[str, float], hit: Mapping[str, float]) -> float:
    """The share of a unit reclaimed: each pool's reclaimed share weighed by the mix (of what was placed)."""
    placed = sum(mix.values())
    return sum(w * min(1.0, hit.get(p, 0.0)) for p, w in mix.items()) / placed if placed else 0.0


def card_shares(slots: Sequence[Slot], hit: Mapping[str, float], price: Mapping[str, float],
                room: Mapping[str, float], agg_room: Mapping[str, float]) -> dict[str, float]:
    """One workload at one card: the reclaimed share under each strategy (its eligible pools with room;
    ``room``/``agg_room``: each pool's own and its aggregate's free share)."""
    cheapest = min(slots, key=lambda s: (price[s.pool], s.pool))

    def by(key: Any) -> float:
        return reclaimed(capped_fill(sorted(slots, key=lambda s: (key(s.pool), price[s.pool], s.pool))), hit)
    return {
        "single-cheapest": min(1.0, hit.get(cheapest.pool, 0.0)),
        "capped oracle": by(lambda p: hit.get(p, 0.0)),
        "capped price-first": by(lambda p: 0.0),
        "capped aggregate room": by(lambda p: -agg_room[p]),
        "capped pool room": by(lambda p: -room[p]),
    }


def measure(trace: Any, contracts: Sequence[Any], days: float, horizon: timedelta) -> tuple[int, dict[str, float]]:
    """(workload-cards scored, strategy -> mean reclaimed share within ``horizon``)."""
    pools = {p.pool_id: p for p in trace.pools if str(p.purchase_model) == "reclaimable"}
    eligible = {c.workload: [pid for pid, p in pools.items() if p.fits(c)] for c in contracts}
    reclaims = [r for r in trace.reclaims if not r.drill and r.pool_id in pools]
    times = [r.time for r in reclaims]
    frees = dict(trace.free)
    total: dict[str, float] = defaultdict(float)
    scored, end = 0, trace.start + timedelta(days=days)
    for t, rates in trace.rate_cards:
        free = frees.get(t)
        if free is None or not trace.start <= t < end:
            continue
        hit: dict[str, float] = defaultdict(float)
        for r in reclaims[bisect.bisect_left(times, t):bisect.bisect_left(times, t + horizon)]:
            hit[r.pool_id] += r.share
        price = {pid: float(rates[pid]) / float(pools[pid].guaranteed_rate_eur_h) for pid in pools if pid in rates}
        room = {pid: free.get(pid, 0) / trace.capacity[pid] if trace.capacity[pid] else 0.0 for pid in pools}
        agg_room = aggregate_shares(pools, trace.capacity, free)
        for pids in eligible.values():
            slots = [Slot(pid, pools[pid].aggregate, pools[pid].hall) for pid in pids
                     if free.get(pid, 0) > 0 and pid in price]
            if not slots:
                continue
            for name, share in card_shares(slots, hit, price, room, agg_room).items():
                total[name] += share
            scored += 1
    return scored, {k: v / scored for k, v in total.items()} if scored else {}


def main(argv: Sequence[str] | None = None) -> int:
    from contracts.compiler import check_repo

    parser = argparse.ArgumentParser(prog="bench.caps_bound", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--horizon-h", type=float, default=2.0)
    parser.add_argument("--cache", type=Path, default=None,
                        help="the replay cache's directory (default: controllers.replay.disk_cache.cache_dir())")
    args = parser.parse_args(argv)
    repo = Path(__file__).resolve().parents[1]
    contracts = [w.contract for w in check_repo(repo / "deploy" / "contracts").workloads]
    start = datetime(2026, 10, 1, tzinfo=UTC)
    print(f"{len(contracts)} workloads, {args.days:g} days a seed: the share of a unit reclaimed within "
          f"{args.horizon_h:g} h (ratio to single-cheapest, same seeds)")
    means: dict[str, list[float]] = defaultdict(list)
    for seed in args.seeds:
        print(f"seed {seed}: recording or reading the trace", file=sys.stderr, flush=True)
        trace = recorded_trace(seed, args.days, 7.0, start, 4.0, 1.0, args.cache)
        scored, shares = measure(trace, contracts, args.days, timedelta(hours=args.horizon_h))
        if not scored or shares["single-cheapest"] <= 0:
            print(f"FAIL: seed {seed}: no card scored, or single-cheapest's pool never reclaimed", file=sys.stderr)
            return 1
        base = shares["single-cheapest"]
        print(f"seed {seed} ({scored:,} workload-cards): " + ", ".join(
            f"{name} {100 * shares[name]:.3f} % ({shares[name] / base:.2f}x)" for name in STRATEGIES))
        for name in STRATEGIES:
            means[name].append(shares[name])
    base = sum(means["single-cheapest"]) / len(args.seeds)
    oracle = sum(means["capped oracle"]) / len(args.seeds)
    for name in STRATEGIES:
        mean = sum(means[name]) / len(args.seeds)
        print(f"  mean over seeds  {name:<20} {100 * mean:7.3f} %   {mean / base:5.2f}x")
    verdict = "within reach" if oracle < base else "out of reach"
    print(f"below single-cheapest within the caps: {verdict} (capped oracle {oracle / base:.2f}x single-cheapest)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
