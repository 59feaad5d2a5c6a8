"""Trace the controller engine's failed launches: a diagnostic, not a benchmark (no target).

    PYTHONPATH=. nice -n 5 .venv/bin/python -m bench.trace_launch_failures --engine controller --days 1 \
        --strategy single-cheapest --seed 2

Runs ``sco simulate`` with its arguments in this process (``--jobs 1``), wrapping the simulated region's
``launch``: every refused launch is counted by the launch's purpose (``sco_purpose``: reclaimable, floor,
fallback), the pool's purchase model, the refusal (capacity or quota), whether the 5-minute rate card still showed
the room the launch asked for, whether the pool was excluded as full at the time, and whether the same launch key
had already failed (a retry of one intent). Prints one ``FAIL`` line per refusal of the first 40, then ``LAUNCHES``
(the counts, JSON) and the ten launch keys that failed most.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

import controllers.controller.decide as decide_module
from contracts.provider_errors import CapacityUnavailable, QuotaExceeded
from controllers.simregion.region import SimulatedRegion

COUNTS: Counter[str] = Counter()
KEYS: Counter[str] = Counter()
FULL: set[str] = set()          # pools excluded as full in the last decided pass
NOTIFIED: set[str] = set()
_LAUNCH = SimulatedRegion.launch
_STATES = decide_module.pool_states_for


def _states(market: Any, observed: Any, lost: Any, *rest: Any) -> Any:
    """Per pass: the pools excluded as full, and (the evidence for moving units out of them) our live instances
    and new notices in full pools and elsewhere; at a pool's first full pass, whether the card showed room."""
    for pid in market.inputs.full - FULL:
        COUNTS["full-exclusions-seen"] += 1
        COUNTS["full-card-showed-room" if market.free.get(pid, 0) > 0 else "full-card-no-room"] += 1
    FULL.clear()
    FULL.update(market.inputs.full)
    for o in observed:
        where = "in-full-pools" if o.pool in FULL else "elsewhere"
        if o.live:
            COUNTS[f"instance-passes-{where}"] += 1
        if o.status == "notified" and o.instance_id not in NOTIFIED:
            NOTIFIED.add(o.instance_id)
            COUNTS[f"notices-{where}"] += 1
    return _STATES(market, observed, lost, *rest)


def _launch(self: SimulatedRegion, request: Any) -> Any:
    purpose = request.metadata.get("sco_purpose", "reclaimable")
    COUNTS[f"asked-{purpose}"] += 1
    try:
        return _LAUNCH(self, request)
    except (CapacityUnavailable, QuotaExceeded) as exc:
        pool = self.engine.specs[self.engine.index[request.pool_id]].pool
        card = {e.pool_id: e.free_instances for e in self.rate_card().entries}.get(request.pool_id)
        key = request.metadata.get("sco_launch_key", "")
        why = "quota" if isinstance(exc, QuotaExceeded) else "capacity"
        for name in (f"failed-{purpose}", f"failed-{pool.purchase_model}", f"failed-{why}",
                     f"failed-{purpose}-{pool.purchase_model}-{why}",
                     "failed-card-showed-room" if card is not None and card >= request.count else "failed-card-no-room",
                     "failed-in-full-pool" if request.pool_id in FULL else "failed-outside-full-pools",
                     "failed-retry-of-a-failed-key" if KEYS[key] else "failed-first-try-of-a-key"):
            COUNTS[name] += 1
        KEYS[key] += 1
        if sum(KEYS.values()) <= 40:
            print(f"FAIL {self.engine.now:.0f} {request.pool_id} {purpose} {pool.purchase_model} asked "
                  f"{request.count} card {card} key {key}: {exc}", flush=True)
        raise


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``sco simulate`` with ``argv`` (one process), traced."""
    from sco.cli import main as sco_main

    SimulatedRegion.launch = _launch    # type: ignore[method-assign]
    vars(decide_module)["pool_states_for"] = _states
    try:
        code = sco_main(["simulate", *(sys.argv[1:] if argv is None else argv), "--jobs", "1"])
    finally:
        SimulatedRegion.launch = _LAUNCH    # type: ignore[method-assign]
        vars(decide_module)["pool_states_for"] = _STATES
    print("LAUNCHES", json.dumps(COUNTS, sort_keys=True))
    print("KEYS", json.dumps(KEYS.most_common(10)))
    return code


if __name__ == "__main__":
    sys.exit(main())
