"""Planner speed at a given size: a full re-plan, one changed claim, and a naive greedy floor on the same inputs.

    .venv/bin/python -m bench.planner                                  # 220 x 141, then 2,000 x 1,400
    .venv/bin/python -m bench.planner --workloads 2000 --pools 1400    # one size

Inputs: the example contracts (``deploy/contracts/workloads``, 14 templates) repeated to ``--workloads``, and
the simulated region's catalogue (141 reclaimable pools over three halls, with committed and guaranteed pools)
repeated to ``--pools`` reclaimable pools: each copy has its own pool ids and host aggregates and rates and
interruption rates jittered by up to 10 %, so copies do not tie. Reclaimable pools have 400 instances free,
others 150; claims are 10..120 units (seed 1).

Baseline in the same run, a true floor: the naive greedy, the least work a placement can do. One pass over the
claims; each takes the cheapest eligible pool (rate per unit) with room and puts what fits there: no floor, no
caps, no spread, no depth premium. Like the planner it reads eligibility from per-shape tables built once per
run, so the ratio is the planner's placement work against the least placement work. For reference (not a
target) ``--scan-reference`` also times the greedy scanning every pool per claim, as the issue's 2.9-3.75x
comparison did.

One changed claim (the last claim's units + 7) is timed twice: against a plan set where every other plan is
complete (the first ``--workloads`` complete workloads of a list a quarter longer), so exactly one claim is
re-planned, which the goal is about; and on the inputs as they are, where the planner also re-plans every plan
the first pass left short (until 2 Dec 2026 every floor of 4 or 7 units over three halls was one unit short,
floor(0.4 x 4) = 1 a hall, and 137 plans were retried every pass; such a floor now takes ceil(units / halls)
a hall, see controllers/planning/floor.py).

Goals (DESIGN §6): full re-plan ≤ 1 s and ≤ 1.5x the naive greedy at 2,000 x 1,400; ≤ 0.5 s at
220 x 141; one changed claim ≤ 10 ms at 2,000 workloads. Medians of ``--rounds`` rounds; the ratio is the
median of per-pair ratios over four times as many pairs of the planner and the greedy run back to back
(``paired``: this machine's speed drifts between blocks of rounds), printed with its quartiles beside the ratio
of the block medians. Ends with ``full re-plan <N> ms, <R>x the naive greedy`` and one PASS/FAIL line per goal;
exits 1 on a FAIL.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from contracts.compiler import check_repo
from contracts.pools import Pool, PurchaseModel, load_catalogue
from contracts.schema import Contract
from controllers.planning import Claim, PlanSet, PoolState, WorkloadPlan, plan, pool_states, units_per_instance

from .compile_contracts import make_repo

NOW = datetime(2026, 11, 29, tzinfo=UTC)
CENT = Decimal("0.0001")


CPU: dict[str, float] = {}  # median process CPU seconds of the last ``timed`` call per label


def timed(fn: Callable[[], object], rounds: int, label: str = "") -> float:
    """Median wall seconds of ``rounds`` calls; the median CPU seconds go to ``CPU[label]``.

    Each call is timed with a collection of the two young generations while its result is still held: the
    planner pauses the collector while it plans, which moves the collections its survivors cost to
    the caller's next allocation; this puts them back in its time, as the same collection charges the greedy
    (or an unpaused planner) with what its own young collections had left.
    """
    samples, cpu = [], []
    for _ in range(rounds):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = fn()
        gc.collect(1)
        del result
        samples.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    CPU[label] = statistics.median(cpu)
    return statistics.median(samples)


def paired(first: Callable[[], object], second: Callable[[], object], rounds: int
           ) -> tuple[float, float, float, float, float]:
    """Both calls timed in pairs, alternately first: medians of each and of the per-pair ratio, with its quartiles.

    This machine's speed drifts by a third over minutes (the same greedy took 52 ms in one run and 88 ms in the
    next): timing every round of one and then every round of the other measures the drift as much as the code.
    A pair runs both within a fifth of a second, so its ratio is measured at one speed. Before each call the
    collector runs untimed (``gc.collect()``), so neither pays for what the other left behind: without it the
    greedy paid the full collection the planner's survivors trigger, which flattered the planner by ~0.1x.
    Each call is timed with ``gc.collect(1)`` while its result is held, as ``timed`` does. Returns first's and
    second's median seconds, the median ratio first/second and its lower and upper quartiles.
    """

    def one(fn: Callable[[], object]) -> float:
        gc.collect()
        start = time.perf_counter()
        result = fn()
        gc.collect(1)
        del result
        return time.perf_counter() - start

    a, b, ratios = [], [], []
    for n in range(rounds):
        if n % 2:
            x = one(first)
            y = one(second)
        else:
            y = one(second)
            x = one(first)
        a.append(x)
        b.append(y)
        ratios.append(x / y)
    q1, _, q3 = statistics.quantiles(ratios, n=4)  # the caller runs at least 20 pairs
    return statistics.median(a), statistics.median(b), statistics.median(ratios), q1, q3


def templates() -> tuple[list[Contract], list[Pool]]:
    with tempfile.TemporaryDirectory() as tmp:
        make_repo(Path(tmp), count=14)
        result = check_repo(Path(tmp))
        assert not result.errors, [f.render() for f in result.errors][:3]
        return [w.contract for w in result.workloads], list(load_catalogue(Path(tmp) / "pools.csv").pools)


def scaled_pools(base: list[Pool], reclaimable: int, rng: random.Random) -> list[Pool]:
    out: list[Pool] = []
    copy = 0
    while sum(p.purchase_model is PurchaseModel.RECLAIMABLE for p in out) < reclaimable:
        for p in base:
            if p.purchase_model is PurchaseModel.RECLAIMABLE:
                if sum(q.purchase_model is PurchaseModel.RECLAIMABLE for q in out) >= reclaimable:
                    continue
                jitter = Decimal(str(round(rng.uniform(0.9, 1.0), 3))) if copy else Decimal(1)
                rate = (p.rate_eur_h * jitter).quantize(CENT)
            else:
                rate = p.rate_eur_h
            out.append(p.model_copy(update={
                "pool_id": f"{p.pool_id}-x{copy}" if copy else p.pool_id,
                "aggregate": f"{p.aggregate}-x{copy}" if copy else p.aggregate, "rate_eur_h": rate,
                "interruption_rate_pct_h": (p.interruption_rate_pct_h
                                            * Decimal(str(round(rng.uniform(0.9, 1.1), 2)))).quantize(CENT)}))
        copy += 1
    return out


def inputs(workloads: int, reclaimable: int) -> tuple[list[Claim], list[PoolState]]:
    rng = random.Random(1)
    contracts, catalogue = templates()
    pools = scaled_pools(catalogue, reclaimable, rng) if reclaimable != 141 else catalogue
    available = {p.pool_id: (400 if p.purchase_model is PurchaseModel.RECLAIMABLE else 150) for p in pools}
    claims = [Claim(contracts[i % len(contracts)].model_copy(
        update={"workload": f"{contracts[i % len(contracts)].workload}-{i:04d}"}), rng.randint(10, 120))
        for i in range(workloads)]
    return claims, pool_states(pools, available)


def _eligible(s: PoolState, c: Contract, threshold: Decimal) -> bool:
    p = s.pool
    return (not s.excluded and p.purchase_model is PurchaseModel.RECLAIMABLE and p.region == c.region
            and s.discount_ratio < threshold and p.fits(c))


def naive_greedy(claims: Sequence[Claim], pools: Sequence[PoolState], tables: bool = True,
                 threshold: Decimal = Decimal("0.85")) -> dict[str, tuple[str, int, int]]:
    """The floor: each claim, in one pass, into the cheapest eligible pool with room; no caps, no floor."""
    residual = {s.pool_id: s.available_instances for s in pools}
    shapes: dict[tuple[object, ...], list[tuple[Decimal, str, int]]] = {}
    out = {}
    for claim in claims:
        c = claim.contract
        if tables:
            key = (c.region, c.resources, c.eligible)
            ranked = shapes.get(key)
            if ranked is None:
                ranked = shapes[key] = sorted((s.rate_eur_h / k, s.pool_id, k) for s in pools
                                              if _eligible(s, c, threshold)
                                              and (k := units_per_instance(s.pool, c)) > 0)
        else:  # scan every pool for every claim
            ranked = [min(((s.rate_eur_h / k, s.pool_id, k) for s in pools if residual[s.pool_id] > 0
                           and _eligible(s, c, threshold) and (k := units_per_instance(s.pool, c)) > 0),
                          default=(Decimal(0), "", 0))]
        for _, pid, k in ranked:
            if k and residual[pid] > 0:
                instances = min(residual[pid], math.ceil(claim.units / k))
                residual[pid] -= instances
                out[claim.workload] = (pid, min(claim.units, instances * k), instances)
                break
    return out


def check(goal: str, ok: bool) -> bool:
    print(f"{'PASS' if ok else 'FAIL'}: {goal}")
    return ok


def incremental(claims: list[Claim], pools: list[PoolState], rounds: int) -> tuple[float, tuple[str, ...]]:
    """One changed claim (the last one's units + 7) against a plan set of ``claims``."""
    first = plan(claims, pools, NOW)
    changed = [*claims[:-1], Claim(claims[-1].contract, claims[-1].units + 7)]
    seconds = timed(lambda: plan(changed, pools, NOW, previous=first), rounds, "incremental")
    replanned = plan(changed, pools, NOW, previous=first).replanned
    _check_replanned(first, claims, replanned)
    return seconds, replanned


def settled(workloads: int, reclaimable: int) -> tuple[list[Claim], list[PoolState]]:
    """``workloads`` claims every one of whose plans is complete: the first complete ones of a longer list."""
    more, pools = inputs(workloads * 5 // 4, reclaimable)
    first = plan(more, pools, NOW)
    complete = [c for c in more if not _short(first.plans[c.contract.workload], c)][:workloads]
    return complete, pools


def run(workloads: int, reclaimable: int, rounds: int, scan_reference: bool) -> bool:
    claims, pools = inputs(workloads, reclaimable)
    full = timed(lambda: plan(claims, pools, NOW), rounds, "full")
    greedy = timed(lambda: naive_greedy(claims, pools), rounds, "greedy")
    pair_full, pair_greedy, ratio, q1, q3 = paired(lambda: plan(claims, pools, NOW),
                                                   lambda: naive_greedy(claims, pools), max(rounds * 4, 20))
    scan = timed(lambda: naive_greedy(claims, pools, tables=False), 1) if scan_reference else 0.0
    retried, retried_names = incremental(claims, pools, rounds * 3)
    retried_cpu = CPU["incremental"]
    alone, alone_names = incremental(*settled(workloads, reclaimable), rounds * 3)
    _describe(claims, pools, plan(claims, pools, NOW))
    print("wall-clock medians (CPU-time medians of this process in brackets: what a loaded box does not inflate)")
    print(f"naive greedy, per-shape tables (floor) : {greedy * 1000:9.1f} ms  [{CPU['greedy'] * 1000:.1f} ms]")
    if scan:
        print(f"naive greedy, every pool per claim     : {scan * 1000:9.1f} ms  (reference: the issue's comparison; "
              f"full re-plan {full / scan:.2f}x it)")
    print(f"full re-plan                           : {full * 1000:9.1f} ms  [{CPU['full'] * 1000:.1f} ms]")
    print(f"one changed claim, others complete     : {alone * 1000:9.2f} ms  [{CPU['incremental'] * 1000:.2f} ms] "
          f"({len(alone_names)} re-planned)")
    print(f"one changed claim, these inputs        : {retried * 1000:9.2f} ms  [{retried_cpu * 1000:.2f} ms] "
          f"({len(retried_names)} re-planned: "
          f"the changed claim and {len(retried_names) - 1} left short by the first pass, retried every pass)")
    print(f"in pairs, {max(rounds * 4, 20)} rounds (each pair at one machine speed; the ratio's goal is read here)")
    print(f"naive greedy / full re-plan            : {pair_greedy * 1000:9.1f} ms / {pair_full * 1000:.1f} ms; "
          f"ratio per pair: median {ratio:.2f}x, quartiles {q1:.2f}x-{q3:.2f}x "
          f"(blocks above: {full / greedy:.2f}x)")
    print(f"full re-plan {full * 1000:.0f} ms, {ratio:.2f}x the naive greedy")
    goal_s = 0.5 if workloads <= 220 else 1.0
    ok = check(f"full re-plan at {workloads} x {reclaimable}: {full * 1000:.0f} ms ≤ {goal_s * 1000:.0f} ms",
               full <= goal_s)
    if workloads >= 2000:
        ok &= check(f"full re-plan {ratio:.2f}x the naive greedy (median of pairs) ≤ 1.5x", ratio <= 1.5)
        ok &= check(f"one changed claim at {workloads} workloads (others complete): {alone * 1000:.2f} ms ≤ 10 ms",
                    alone <= 0.010 and len(alone_names) == 1)
    return ok


def _short(p: WorkloadPlan, c: Claim) -> bool:
    return bool(p.shortfall_units) or p.floor_units < math.ceil(c.units * c.contract.floor_pct / 100)


def _check_replanned(first: PlanSet, claims: list[Claim], replanned: tuple[str, ...]) -> None:
    # the changed claim, plus every plan the first pass left short (they are retried each pass)
    short = {c.contract.workload for c in claims if _short(first.plans[c.contract.workload], c)}
    changed = claims[-1].contract.workload
    assert changed in replanned and set(replanned) <= short | {changed}, replanned


def _describe(claims: list[Claim], pools: list[PoolState], first: PlanSet) -> None:
    reclaimable = sum(1 for s in pools if s.pool.purchase_model is PurchaseModel.RECLAIMABLE)
    shapes = len({(c.contract.region, c.contract.resources, c.contract.eligible) for c in claims})
    placed = sum(p.wanted_units - p.shortfall_units for p in first.plans.values())
    wanted = sum(c.units for c in claims)
    pools_per = statistics.median(len(p.pools) for p in first.plans.values())
    premium = sum(p.depth_premium_eur_h for p in first.plans.values())
    cost = sum(p.cost_eur_h for p in first.plans.values())
    print(f"\nworkloads: {len(claims)} ({shapes} shapes), reclaimable pools: {reclaimable}, pool states: {len(pools)}, "
          f"units placed: {placed} of {wanted}, median pools/workload: {pools_per}, load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"plan cost €{cost:.2f}/h, of which depth premium €{premium:.2f}/h ({premium / cost:.1%})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.planner", description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, help="number of workloads (default: 220, then 2000)")
    parser.add_argument("--pools", type=int, help="number of reclaimable pools (default: 141, then 1400)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per figure (median; default 5)")
    parser.add_argument("--scan-reference", action="store_true",
                        help="also time the greedy that scans every pool per claim, once (minutes at 2000 x 1400)")
    args = parser.parse_args(argv)
    if (args.workloads is None) != (args.pools is None):
        parser.error("--workloads and --pools go together (or neither, for 220 x 141 then 2000 x 1400)")
    sizes = [(args.workloads, args.pools)] if args.workloads else [(220, 141), (2000, 1400)]
    if any(w < 1 or p < 1 for w, p in sizes) or args.rounds < 1:
        parser.error("--workloads, --pools and --rounds must be at least 1")
    ok = True
    for workloads, reclaimable in sizes:
        ok &= run(workloads, reclaimable, args.rounds, args.scan_reference)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
