"""Builders the tests and the benches share: a valid contract document per tier, resolved contracts for one
partition, and a scheduler stand-in that hands the controller work items."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from contracts.schema import Contract, ContractSpec
from contracts.tiers import resolve
from controllers.controller.claims import WorkItem

__all__ = ["PARTITION", "T0", "FakeSource", "base", "contract", "contracts"]


def base(tier: str = "T2", **fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "sco/v1", "workload": "test-workload", "version": 1, "owner": "owner@example.org",
        "business_unit": "research", "scheduler": "slurm", "partition": "r1/slurm-hpc", "tier": tier,
        "resources": {"vcpu": 8, "memory_gib": 32},
    }
    if tier in ("T1", "T2", "T4") or fields.get("nearest_tier") in ("T1", "T2", "T4"):
        doc["fallback"] = {"spend_cap_24h_eur": 100, "approver": "budget@example.org"}
    if tier == "T1":
        doc["deadline"] = "daily@06:00Z"
    doc.update(fields)
    return doc


PARTITION = "r1/slurm-hpc"
T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def contract(name: str = "etl", tier: str = "T3", vcpu: int = 4, mem: int = 16, **fields: Any) -> Contract:
    doc = base(tier, workload=name, partition=PARTITION, resources={"vcpu": vcpu, "memory_gib": mem}, **fields)
    c, findings = resolve(ContractSpec.model_validate(doc))
    assert c is not None, findings
    return c


def contracts(*cs: Contract) -> dict[str, Contract]:
    return {c.ref: c for c in cs}


@dataclass
class FakeSource:
    """A scheduler stand-in: work items and the set of idle node names."""

    items: list[WorkItem] = field(default_factory=list)
    idle: set[str] = field(default_factory=set)

    def work(self) -> list[WorkItem]:
        return list(self.items)

    def idle_nodes(self) -> set[str]:
        return set(self.idle)

    def demand(self, ref: str | None, n: int, vcpu: float = 4, mem: float = 16, prefix: str = "j") -> None:
        self.items += [WorkItem("slurm", f"{prefix}{len(self.items) + i}", ref, vcpu, mem, "pending") for i in range(n)]
