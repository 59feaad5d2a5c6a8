"""Claims: pending and running contracted work, normalised to capacity claims per workload.

A scheduler source (``claims_slurm``, ``claims_k8s``) lists **work items**: a Slurm job or a Kubernetes pod
in a reclaimable partition / tolerating the reclaimable taint, with the contract reference it declared.
``normalise`` turns them into one ``controllers.planning.Claim`` per workload, in the contract's units
(ceil of the item's vCPU and memory over the contract's declared unit). Running items count too: a claim is
the demand the workload has on reclaimable capacity now, so the plan stays put while its jobs run. An item
without a contract, or naming one that is not in force, is **refused** — a ``claim-refused`` event, never
placed (ADR-04).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from contracts.schema import Contract
from controllers.planning import Claim

from .model import Note, WorkItem

__all__ = ["ClaimSource", "Normalised", "WorkItem", "WorkMemo", "normalise", "normalised", "parse_contract_ref"]

_REF = re.compile(r"(?:^|[\s;,])contract=([a-z0-9][a-z0-9-]*)@(\d+)(?:$|[\s;,])")


class ClaimSource(Protocol):
    """A scheduler cluster as the controller sees it."""

    def work(self) -> list[WorkItem]:
        """Pending and running contracted (or uncontracted) work in reclaimable partitions."""
        ...

    def idle_nodes(self) -> set[str]:
        """Names of nodes the scheduler reports idle (no work), for the three-observation orphan rule."""
        ...


def parse_contract_ref(text: str | None) -> str | None:
    """``contract=<name>@<version>`` anywhere in a comment / label value, else None."""
    if not text:
        return None
    m = _REF.search(text.strip())
    return f"{m.group(1)}@{m.group(2)}" if m else None


@dataclass(frozen=True)
class Normalised:
    claims: tuple[Claim, ...]
    refusals: tuple[tuple[WorkItem, Note], ...]


def normalise(items: Sequence[WorkItem], contracts: Mapping[str, Contract]) -> Normalised:
    """``contracts`` is keyed by ``<name>@<version>`` (the controller bundle's keys)."""
    units: dict[str, int] = defaultdict(int)
    chosen: dict[str, Contract] = {}
    refusals: list[tuple[WorkItem, Note]] = []
    for item in items:
        contract = contracts.get(item.contract_ref) if item.contract_ref else None
        if contract is None:
            why = ("no contract declared (add --comment=contract=<name>@<version>)" if not item.contract_ref
                   else f"contract {item.contract_ref} is not in force in this partition's bundle")
            refusals.append((item, Note("claim-refused", why, workload=(item.contract_ref or "").split("@")[0] or None,
                                        attributes={"item": item.item_id, "source": item.source,
                                                    "contract_ref": item.contract_ref})))
            continue
        r = contract.resources
        n = max(1, math.ceil(max(item.vcpu / r.vcpu, item.memory_gib / r.memory_gib)))
        units[contract.workload] += n
        prev = chosen.get(contract.workload)
        if prev is None or contract.version > prev.version:
            chosen[contract.workload] = contract
    claims = tuple(Claim(chosen[w], u) for w, u in sorted(units.items()))
    return Normalised(claims, tuple(refusals))


@dataclass
class WorkMemo:
    """The last pass's work items, the contracts it normalised them with and the result: a pass whose scheduler
    reports the same items (equal, element by element) under the same contracts gets the same ``Normalised``. A
    memo (``Memory.work``): emptying it changes no decision."""

    items: tuple[WorkItem, ...] = ()
    contracts: Mapping[str, Contract] = field(default_factory=dict)
    result: Normalised | None = None


def normalised(items: Sequence[WorkItem], contracts: Mapping[str, Contract], memo: WorkMemo) -> Normalised:
    """``normalise``, or the memo's result when the items and the contracts are those it was computed from."""
    items = tuple(items)
    if memo.result is None or items != memo.items or contracts != memo.contracts:
        memo.items, memo.contracts, memo.result = items, contracts, normalise(items, contracts)
    return memo.result
