"""Which plans of the previous generation are kept (ADR-08), in time that does not grow with them.

A plan is kept when its claim is unchanged, it placed all of it, and it still fits the pools in force: none of
its pools is excluded or gone, and its reclaimable units respect the group cap under the groups in force
(a merged group, ADR-06). The first two read the claim; the last reads every allocation of every plan.

So the planner remembers, with each plan set it returns (``PlanSet.memory``), a ``Summary``: the pool facts it was
planned under (groups in force, exclusions, the group share), the instances its plans hold per pool, and which of
its plans fit those facts. When the next pass has the same pool facts, a plan fits them exactly when the summary
says so, and the capacity the kept plans hold is the summary's usage less the plans not kept: the pass reads the
allocations of the plans it replaces, not those of the plans it keeps. When the pool states are the very same
objects, it also reuses the pool table's static part (eligibility and rank orders per shape), and a claim that is
the very object its plan was checked against is kept without reading it again. A plan set the planner has not
summarised (another process's, or one whose pool facts changed) is checked plan by plan, with the same result. The
summary is a memo of a pure function's inputs (all frozen), carried by the plan set it describes and valid only for
that plan set's very ``plans`` mapping: it never changes a plan.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from .model import Caps, Claim, PlanSet, PoolState, Purpose, Strategy, WorkloadPlan
from .static import Static

__all__ = ["Facts", "Summary", "fits_pools", "summary_of", "usage_of"]


@dataclass(frozen=True)
class Facts:
    """The pool facts a plan's fit depends on: correlation group per pool in force, exclusions, group share."""

    groups: dict[str, str]
    excluded: frozenset[str]
    group_share: Decimal

    @classmethod
    def of(cls, pools: Sequence[PoolState], caps: Caps) -> Facts:
        """The facts of the pools in force."""
        return cls({s.pool_id: s.group_id for s in pools}, frozenset(s.pool_id for s in pools if s.excluded),
                   caps.group_share)

    @classmethod
    def of_static(cls, static: Static, caps: Caps) -> Facts:
        """``of`` the pools of ``static``, read from its columns (a first plan builds them anyway)."""
        ids = static.ids
        return cls(dict(zip(ids, static.group, strict=True)),
                   frozenset(itertools.compress(ids, static.excluded)), caps.group_share)


@dataclass(frozen=True)
class Summary:
    """What the planner remembers of a plan set it made.

    Attributes:
        facts: the pool facts it was planned under.
        usage: instances its plans hold per pool.
        fitting: workloads whose plans fit ``facts``.
        static: the pool table's static part (columns, shapes, rank orders), when a table was built.
        config: the planner configuration it was made with.
        claims: the claim object each workload's plan was checked or made against.
        settled: workloads whose plan is unchanged and complete for that claim object and fits ``facts``:
            kept next pass when the pool states, configuration and claim object are the very same.
        plans: the plan set's own ``plans`` mapping (the very object): a plan set with other plans is not it.
    """

    facts: Facts
    usage: dict[str, int]
    fitting: frozenset[str]
    static: Static | None
    config: object
    claims: dict[str, Claim]
    settled: frozenset[str]
    plans: dict[str, WorkloadPlan]


def summary_of(plans: PlanSet | None) -> Summary | None:
    """The summary the planner left with ``plans``, if it describes these very plans."""
    memory = plans.memory if plans is not None else None
    return memory if isinstance(memory, Summary) and memory.plans is plans.plans else None  # type: ignore[union-attr]


def _within_group_cap(prev: WorkloadPlan, groups: Mapping[str, str], caps_share: Decimal, short: int = 0) -> bool:
    """The plan's reclaimable units per correlation group in force stay within the group cap (ADR-06).

    The cap is taken on its placed units plus ``short`` (a short plan's cap is on what it was made for).
    """
    if prev.strategy is Strategy.SINGLE_CHEAPEST:
        return True
    per: dict[str, int] = {}
    for a in prev.allocations:
        if a.purpose is Purpose.RECLAIMABLE:
            group = groups.get(a.pool_id, a.pool_id)
            per[group] = per.get(group, 0) + a.units
    cap = max(1, math.floor(Decimal(sum(per.values()) + short) * caps_share))
    return all(units <= cap for units in per.values())


def fits_pools(prev: WorkloadPlan, facts: Facts, *, short: bool = False) -> bool:
    """None of the plan's pools is excluded or gone, and it respects the group cap under the groups in force.

    ``short``: the cap on the units it placed plus those it left short, as it was made.
    """
    pools = prev.pools
    return (not (pools & facts.excluded) and pools <= facts.groups.keys()
            and _within_group_cap(prev, facts.groups, facts.group_share, prev.shortfall_units if short else 0))


def usage_of(plans: Iterable[WorkloadPlan]) -> dict[str, int]:
    """Instances per pool held by ``plans``."""
    usage: dict[str, int] = {}
    for p in plans:
        for a in p.allocations:
            usage[a.pool_id] = usage.get(a.pool_id, 0) + a.instances
    return usage
