"""Diagnostic: what each strategy pays per unit for the flavours it picks, against the tightest fit.

    .venv/bin/python -m bench.fit_cost [--markets 3] [--units 24]

Through the controller, ours' reclaimable hours cost 46 % of their work's guaranteed value where single-cheapest's
cost 36.5 % and price-first's 39 % (35 % is nothing paid beyond the work); ours with the caps lifted still paid
45 %, so the spread is not the cause. This bench plans the example contracts on the simulated region's catalogue
with the production planner (random room in each reclaimable pool, ``--markets`` draws, seeded) under each
strategy and prints, per unit placed on reclaimable capacity, the guaranteed price of the instances the plan pays
for against the tightest fit's (the eligible pool with the lowest guaranteed price per unit it holds): 1.00 is a
perfect fit; the baseline is single-cheapest, measured in the same run. Exit 1 when nothing could be placed.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from contracts.compiler import check_repo
from contracts.pools import Pool, PurchaseModel
from contracts.schema import Contract
from controllers.planning import Claim, Strategy, plan, pool_states, units_per_instance
from controllers.planning.planner import PlannerConfig
from controllers.simregion.topology import build_pools

STRATEGIES = (Strategy.SINGLE_CHEAPEST, Strategy.PRICE_FIRST, Strategy.DEPTH_FIRST)


def tightest(contract: Contract, pools: Sequence[Pool]) -> Decimal | None:
    """The lowest guaranteed price per unit among the reclaimable pools a unit of ``contract`` fits."""
    prices = [p.guaranteed_rate_eur_h / n for p in pools
              if p.purchase_model is PurchaseModel.RECLAIMABLE and p.fits(contract)
              and (n := units_per_instance(p, contract)) > 0]
    return min(prices, default=None)


def fit_ratio(contracts: Sequence[Contract], pools: Sequence[Pool], strategy: Strategy, rng: random.Random,
              units: int) -> tuple[float, int]:
    """(guaranteed price paid per reclaimable unit against the tightest fit's, units placed) on one market."""
    by_id = {p.pool_id: p for p in pools}
    room = {p.pool_id: rng.randint(5, 60) if p.purchase_model is PurchaseModel.RECLAIMABLE else 50 for p in pools}
    states = pool_states(pools, room, dict.fromkeys(room, 60))
    planned = plan([Claim(c, units) for c in contracts], states, datetime(2026, 10, 1, tzinfo=UTC),
                   config=PlannerConfig(strategy=strategy))
    paid, ideal, placed = Decimal(0), Decimal(0), 0
    for c in contracts:
        best, wp = tightest(c, pools), planned.plans.get(c.workload)
        if best is None or wp is None:
            continue
        for a in wp.allocations:
            pool = by_id[a.pool_id]
            if pool.purchase_model is PurchaseModel.RECLAIMABLE and a.units:
                paid += a.instances * pool.guaranteed_rate_eur_h
                ideal += a.units * best
                placed += a.units
    return (float(paid / ideal) if ideal else 0.0), placed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.fit_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--markets", type=int, default=3)
    parser.add_argument("--units", type=int, default=24)
    args = parser.parse_args(argv)
    pools = [s.pool for s in build_pools("r1")]
    repo = Path(__file__).resolve().parents[1]
    contracts = [w.contract.model_copy(update={"region": "r1"})
                 for w in check_repo(repo / "deploy" / "contracts").workloads]
    means: dict[Strategy, float] = {}
    for strategy in STRATEGIES:
        rng = random.Random(1)   # the same markets for every strategy
        runs = [fit_ratio(contracts, pools, strategy, rng, args.units) for _ in range(args.markets)]
        if not all(placed for _, placed in runs):
            print(f"FAIL: {strategy.value} placed nothing on a market", file=sys.stderr)
            return 1
        means[strategy] = sum(r for r, _ in runs) / len(runs)
        print(f"{strategy.value:<16} pays {means[strategy]:.2f}× the tightest fit's guaranteed price per unit "
              f"(markets: {', '.join(f'{r:.2f}' for r, _ in runs)}; {runs[0][1]} units placed on the first)")
    base = means[Strategy.SINGLE_CHEAPEST]
    for strategy in STRATEGIES[1:]:
        print(f"{strategy.value} / single-cheapest: {means[strategy] / base:.2f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
