"""Trace the controller engine's re-plans and breaker trips: a diagnostic, not a benchmark (no target).

    PYTHONPATH=. nice -n 10 .venv/bin/python -m bench.trace_replans --days 0.25 --seed 1 --strategy depth-first \
        --engine controller

Runs ``sco simulate`` with its arguments, wrapping the planner as the controller calls it and the controller's
decide: every re-plan that moves 10 % or more of a plan's instances is printed (``MOVE``, with its cause:
excluded pool, gone pool, room, claim, short, group), every breaker trip and exclusion the decision publishes
(``NOTE``), and per strategy a ``TRACE`` line of counts: re-plans, instances dropped and added by re-plans, planned
units, instances and EUR/h summed over passes (units per instance, cost per unit), terminations asked.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import controllers.controller.decide as decide_module
import controllers.controller.loop as loop_module
from controllers.planning import Claim, PlanSet, PoolState, WorkloadPlan

STATS: dict[str, Counter[str]] = defaultdict(Counter)


def _cause(prev: WorkloadPlan, new: WorkloadPlan, pools: dict[str, PoolState], held: Counter[str]) -> str:
    excluded = {pid for pid, s in pools.items() if s.excluded}
    if prev.pools & excluded:
        return "excluded"
    if prev.pools - pools.keys():
        return "gone"
    if any(pid in pools and held[pid] > pools[pid].available_instances for pid in prev.pools):
        return "room"
    if prev.claim_digest != new.claim_digest:
        return "claim"
    return "short" if prev.shortfall_units else "group"


def _traced_plan(claims: Sequence[Claim], pools: Sequence[PoolState], now: datetime,
                 previous: PlanSet | None = None, config: Any = None) -> PlanSet:
    out = _PLAN(claims, pools, now, previous, config)
    stats = STATS[str(config.strategy if config else None)]
    stats["passes"] += 1
    old = previous.plans if previous else {}
    by_id = {s.pool_id: s for s in pools}
    for name in out.replanned:
        prev, new = old.get(name), out.plans[name]
        stats["replans"] += 1
        if prev is None:
            continue
        before = Counter({a.pool_id: a.instances for a in prev.allocations})
        after = Counter({a.pool_id: a.instances for a in new.allocations})
        moved = sum((before - after).values())
        stats["instances-dropped"] += moved
        stats["instances-added"] += sum((after - before).values())
        if moved * 10 >= max(1, sum(before.values())):
            why = _cause(prev, new, by_id, before)
            stats["big-move-" + why] += 1
            print(f"MOVE {now:%H:%M} {name} {why} moved {moved} of {sum(before.values())}", flush=True)
    plans = out.plans.values()
    stats["plan-eur-h-x1000"] += int(sum(p.cost_eur_h for p in plans) * 1000)
    stats["plan-units"] += sum(a.units for p in plans for a in p.allocations)
    stats["plan-instances"] += sum(a.instances for p in plans for a in p.allocations)
    return out


def _traced_decide(seen: Any, desired: Any, memory: Any, now: datetime) -> Any:
    d = _DECIDE(seen, desired, memory, now)
    for n in d.notes:
        if n.kind in ("breaker-tripped", "excluded"):
            print(f"NOTE {now:%H:%M} {n.kind} {n.cause} {dict(n.attributes)}", flush=True)
    if d.gated is not None:
        STATS[str(desired.settings.planner.strategy)]["terminations-asked"] += (
            len(d.gated.terminations) + d.gated.held_terminations)
    return d


_PLAN: Callable[..., PlanSet] = vars(decide_module)["plan"]
_DECIDE = vars(loop_module)["decide"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``sco simulate`` with ``argv``, traced."""
    from sco.cli import main as sco_main

    vars(decide_module)["plan"], vars(loop_module)["decide"] = _traced_plan, _traced_decide
    try:
        code = sco_main(["simulate", *(sys.argv[1:] if argv is None else argv)])
    finally:
        vars(decide_module)["plan"], vars(loop_module)["decide"] = _PLAN, _DECIDE
    for strategy, counts in STATS.items():
        print("TRACE", strategy, json.dumps(counts, sort_keys=True))
    return code


if __name__ == "__main__":
    sys.exit(main())
