"""Drills (ADR-33): victim choice and the verdict from the agents' events."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest

from contracts.events import Event
from contracts.provider import Instance, InstanceStatus, OwnerTags
from contracts.subjects import EventKind
from controllers.drills import DrillError, choose_victims, judge


def inst(i: int, pool: str, partition: str = "r1/slurm-hpc", status: InstanceStatus = InstanceStatus.ACTIVE,
         tagged: bool = True) -> Instance:
    tags = OwnerTags(workload="w", pool=pool, partition=partition, generation=1).to_tags() if tagged else ()
    return Instance(instance_id=f"i-{i:04d}", name=f"n{i}", region="r1", pool_id=pool, status=status, tags=tags)


def fleet() -> list[Instance]:
    out = [inst(i, f"p{i % 5}") for i in range(200)]
    out += [inst(1000 + i, "p0", partition="r1/k8s-prod") for i in range(50)]
    out += [inst(2000, "p0", status=InstanceStatus.NOTIFIED), inst(2001, "p0", tagged=False)]
    return out


def test_one_percent_of_the_partition_is_chosen_spread_over_pools_and_only_from_it() -> None:
    chosen = choose_victims(fleet(), "r1/slurm-hpc", 0.01, seed=1)
    assert len(chosen) == 2 and len({int(c[2:]) % 5 for c in chosen}) == 2
    assert all(int(c[2:]) < 1000 for c in chosen)
    assert choose_victims(fleet(), "r1/slurm-hpc", 0.01, seed=1) == chosen  # deterministic for a seed
    spread = Counter(int(c[2:]) % 5 for c in choose_victims(fleet(), "r1/slurm-hpc", 0.05, seed=2))
    assert sorted(spread.values()) == [2, 2, 2, 2, 2]


def test_a_drill_never_takes_less_than_one_instance_nor_more_than_five_percent() -> None:
    assert len(choose_victims(fleet()[:10], "r1/slurm-hpc", 0.01, seed=1)) == 1
    with pytest.raises(DrillError, match=r"at most 0\.05"):
        choose_victims(fleet(), "r1/slurm-hpc", 0.2, seed=1)
    with pytest.raises(DrillError, match="no active instances"):
        choose_victims(fleet(), "r9/nowhere", 0.01, seed=1)


def event(kind: EventKind, instance: str, drain_ms: int, budget_s: int = 90, drill: bool = True) -> dict[str, Any]:
    e = Event(event_id=uuid.uuid4(), kind=kind, time=datetime(2026, 11, 29, tzinfo=UTC), region="r1",
              instance=instance, workload="genomics-align", cause="drill", drill=drill, source="agent",
              attributes={"drain_ms": drain_ms, "budget_s": budget_s, "path": "scheduler", "verified": True})
    return e.model_dump(mode="json")


def test_the_verdict_is_met_overrun_or_never_drained_per_instance() -> None:
    events = [event(EventKind.DRAINED, "i-1", 4_000), event(EventKind.OVERRUN, "i-2", 95_000),
              event(EventKind.DRAINED, "i-3", 91_000),              # drained, but after its 90 s budget
              event(EventKind.DRAINED, "i-4", 1_000, drill=False),  # not this drill's event
              event(EventKind.DRAINED, "i-9", 1_000)]               # not reclaimed by this drill
    report = judge(["i-1", "i-2", "i-3", "i-4"], events)
    assert {v.instance: v.verdict for v in report.verdicts} == {
        "i-1": "met", "i-2": "overrun", "i-3": "overrun", "i-4": "not-drained"}
    assert not report.passed
    assert judge(["i-1"], events).passed


def test_a_drill_with_no_instances_does_not_pass() -> None:
    assert not judge([], []).passed
