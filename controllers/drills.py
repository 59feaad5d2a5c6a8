"""Drills (ADR-33): reclaim a small share of a partition through the provider's own reclaim path, then judge
from the agents' events whether every drained node met its drain budget.

Pure: ``choose_victims`` picks the instances (spread over pools and halls, deterministic for a seed);
``judge`` reads lifecycle events (dicts in the shape of ``contracts.events.Event``) and says, per reclaimed
instance, whether it was drained within its budget, overran, or was never seen draining. Drill events are
excluded from pool scoring by the analytics and the exclusion watcher, and counted here and in the overrun
and drain metrics.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contracts.provider import Instance, InstanceStatus
from contracts.subjects import EventKind

from .errors import DrillError

__all__ = ["DrillError", "DrillReport", "InstanceVerdict", "choose_victims", "judge"]

MAX_FRACTION = 0.05  # a daily drill touches at most 5 % of a partition; a game day reclaims a hall instead


def choose_victims(instances: Sequence[Instance], partition: str, fraction: float, seed: int) -> tuple[str, ...]:
    """``fraction`` of the partition's active instances (at least one), round-robin over pools so one pool
    is not the whole drill."""
    if not 0 < fraction <= MAX_FRACTION:
        raise DrillError(f"fraction must be above 0 and at most {MAX_FRACTION} (a daily drill), got {fraction}; "
                         "reclaim a whole hall with --game-day instead")
    ours = [i for i in instances if i.status is InstanceStatus.ACTIVE and i.owner is not None
            and i.owner.partition == partition]
    if not ours:
        raise DrillError(f"partition {partition!r} has no active instances to drill; check the partition name "
                         "(<region>/<cluster>) and that the controller has placed work")
    count = max(1, math.floor(len(ours) * fraction))
    by_pool: dict[str, list[Instance]] = defaultdict(list)
    for inst in sorted(ours, key=lambda i: i.instance_id):
        by_pool[inst.pool_id or ""].append(inst)
    rng = random.Random(seed)
    for members in by_pool.values():
        rng.shuffle(members)
    pools = sorted(by_pool)
    rng.shuffle(pools)
    chosen: list[str] = []
    while len(chosen) < count:
        for pool in pools:
            if by_pool[pool] and len(chosen) < count:
                chosen.append(by_pool[pool].pop().instance_id)
    return tuple(chosen)


@dataclass(frozen=True)
class InstanceVerdict:
    instance: str
    verdict: str              # "met" | "overrun" | "not-drained"
    drain_ms: int | None
    budget_s: int | None
    path: str | None          # "scheduler" | "local"
    workloads: tuple[str, ...]


@dataclass(frozen=True)
class DrillReport:
    verdicts: tuple[InstanceVerdict, ...]

    @property
    def passed(self) -> bool:
        """True when there were verdicts and every one was met."""
        return bool(self.verdicts) and all(v.verdict == "met" for v in self.verdicts)

    def count(self, verdict: str) -> int:
        """How many verdicts are ``verdict``."""
        return sum(1 for v in self.verdicts if v.verdict == verdict)


def _attrs(event: Mapping[str, Any]) -> Mapping[str, Any]:
    attrs = event.get("attributes") or {}
    return attrs if isinstance(attrs, Mapping) else {}


def judge(reclaimed: Iterable[str], events: Iterable[Mapping[str, Any]]) -> DrillReport:
    """Per reclaimed instance: met (every workload drained within budget), overrun, or not-drained (no
    verify event at all: the agent never acted, which a drill exists to find)."""
    wanted = set(reclaimed)
    seen: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for e in events:
        if e.get("instance") in wanted and e.get("drill") and e.get("kind") in (EventKind.DRAINED, EventKind.OVERRUN):
            seen[str(e["instance"])].append(e)
    verdicts = []
    for inst in sorted(wanted):
        evs = seen.get(inst, [])
        if not evs:
            verdicts.append(InstanceVerdict(inst, "not-drained", None, None, None, ()))
            continue
        over = any(e["kind"] == EventKind.OVERRUN or _late(e) for e in evs)
        slowest = max(evs, key=lambda e: int(_attrs(e).get("drain_ms") or 0))
        a = _attrs(slowest)
        verdicts.append(InstanceVerdict(
            inst, "overrun" if over else "met", int(a.get("drain_ms") or 0), _int(a.get("budget_s")),
            str(a.get("path") or ""), tuple(sorted({str(e.get("workload") or "") for e in evs} - {""}))))
    return DrillReport(tuple(verdicts))


def _late(event: Mapping[str, Any]) -> bool:
    a = _attrs(event)
    budget = _int(a.get("budget_s"))
    return budget is not None and int(a.get("drain_ms") or 0) > budget * 1000


def _int(value: Any) -> int | None:
    return None if value is None else int(value)
