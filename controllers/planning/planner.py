"""The planner: a pure function from claims, pools in force and the previous plan to the next plan (ADR-08).

Per workload, in priority order (floor-bearing tiers first, then deadlines), it fills the floor from
guaranteed capacity (``floor.fill_floor``), then water-fills the reclaimable rest under the caps
(``waterfill.fill``), and records the depth premium against the price-first placement under the same caps and
the same residual capacity. Incremental: a workload whose claim is unchanged, whose plan placed all of it, none
of whose pools is now excluded and whose reclaimable units still respect the group cap under the groups in force
(a merged group, ADR-06) and whose pools still have the room it holds keeps its plan; only the others are
re-planned, on the capacity the kept plans leave. A re-plan of a plan made for the same contract and strategy
keeps what the plan holds and places only what is missing (``incremental``): a re-plan made from scratch moved
every instance the plan held whenever the ranking had moved, which the breaker took for a mass termination.
A plan that left units short is re-planned every pass, so capacity that comes back is used; when the
re-plan places the same, the plan stays the very object it was. When kept plans want more instances in a pool
than it can give (free and ours), the lowest-priority of them are re-planned the same way, instead of being
relaunched into a full pool until it is excluded for thrash.

At fleet scale: eligibility and rank orders come from per-plan tables built once per workload
shape (``tables``), and which plans are kept is decided from what the planner remembers of the plan set it
made last (``keep``), so a pass with one changed claim does not read the plans it keeps. The plans are the
same as they were before both (``tests/controllers/planning/test_equivalence.py``).
"""

from __future__ import annotations

import gc
import itertools
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from contracts.schema import Contract, Eligibility, PlacementStrategy, Resources, TierName

from .costed import costed_fill
from .floor import shared_floor
from .incremental import replan, same_placement
from .keep import Facts, Summary, fits_pools, summary_of, usage_of
from .model import Caps, Claim, PlanSet, PoolState, Purpose, Strategy, WorkloadPlan, workload_plan
from .placed import NOTHING
from .static import Static
from .tables import PoolTable
from .waterfill import shared_fill

__all__ = ["PlannerConfig", "plan", "priority"]

_TIER_ORDER = {TierName.T1: 0, TierName.T4: 1, TierName.T2: 2, TierName.T3: 3, TierName.T5: 4}

# the enum members the hot path compares with, as module names: a name is read in a few nanoseconds, a member as
# an attribute of its enum class in ~50 (some 30,000 reads a full re-plan)
_DEPTH, _PRICE, _CAPACITY, _SINGLE, _COST = (Strategy.DEPTH_FIRST, Strategy.PRICE_FIRST,
                                             Strategy.CAPACITY_OPTIMISED, Strategy.SINGLE_CHEAPEST,
                                             Strategy.EXPECTED_COST)
_FLOOR, _RECLAIMABLE, _CONTRACT_PRICE_FIRST = Purpose.FLOOR, Purpose.RECLAIMABLE, PlacementStrategy.PRICE_FIRST


@dataclass(frozen=True)
class PlannerConfig:
    """Planner settings: the caps, the discount threshold, and a strategy that overrides the contracts'."""

    caps: Caps = field(default_factory=Caps)
    discount_threshold: Decimal = Decimal("0.85")
    strategy: Strategy | None = None  # None: each contract's own (expected-cost; price-first where it says so)


def priority(contract: Contract) -> tuple[int, int, str]:
    """Planning order: base tier (T1, T4, T2, T3, T5, then any other), deadlines first, then workload name."""
    return (_TIER_ORDER.get(contract.base_tier, 5), 0 if contract.deadline else 1, contract.workload)


def _by_priority(claims: Sequence[Claim], before: dict[str, Claim] | None = None) -> list[Claim]:
    """``claims`` sorted by ``priority`` (its keys built in one pass: a plan sorts thousands of claims).

    ``before``: the claims of the last pass by name, in this order. When ``claims`` are the same workloads with
    the very same contract objects (the units may differ), their priorities are too: the order is that one.
    """
    if before is not None and len(before) == len(claims):
        now: dict[str, Claim] = {}
        for claim in claims:
            was = before.get(claim.workload)
            if was is None or was.contract is not claim.contract:
                break
            now[claim.workload] = claim
        else:
            if len(now) == len(claims):  # no workload twice
                return [now[name] for name in before]
    tier = _TIER_ORDER.get
    keys = [(tier((c := claim.contract).base_tier, 5), 0 if c.deadline else 1, c.workload) for claim in claims]
    return [claims[i] for i in sorted(range(len(keys)), key=keys.__getitem__)]


# what planning reads of a claim and its contract: the claim, its workload, digest and units, the contract, its
# placement strategy, floor share, resources, eligibility, partition and business unit
Row = tuple[Claim, str, str, int, Contract, PlacementStrategy, int, Resources, Eligibility, str, str]


def _row(claim: Claim) -> Row:
    c = claim.contract
    return (claim, claim.workload, claim.digest, claim.units, c, c.placement_strategy, c.floor_pct, c.resources,
            c.eligible, c.partition, c.business_unit)


def _rows(claims: Sequence[Claim]) -> list[Row]:
    """The claims' rows in priority order, read in one pass in the claims' own order.

    A first plan reads every claim's contract once, in the order the claims sit in memory, instead of once to sort
    and again in priority order to plan (the second reads missed the cache, a tenth of a plan).
    """
    tier = _TIER_ORDER.get
    pairs = [((tier(c.base_tier, 5), 0 if c.deadline else 1, c.workload), _row(claim))
             for claim in claims for c in (claim.contract,)]
    keys = [key for key, _ in pairs]
    return [pairs[i][1] for i in sorted(range(len(pairs)), key=keys.__getitem__)]


def _strategy(wanted: PlacementStrategy, config: PlannerConfig) -> Strategy:
    """The strategy a claim is planned with: the configuration's, else the one its contract wants.

    A contract that asks depth-first gets expected cost: depth bought where its tolerance and reclaims' cost need it.
    """
    if config.strategy is not None:
        return config.strategy
    return _PRICE if wanted is _CONTRACT_PRICE_FIRST else _COST


def _floor_wanted(units: int, floor_pct: int) -> int:
    return -(-units * floor_pct // 100)  # ceil(units x floor_pct / 100), in integers


def _plan_one(row: Row, strategy: Strategy, floor_units: int, table: PoolTable,
              config: PlannerConfig) -> WorkloadPlan:
    """The plan of a claim from scratch (``row``: the claim's, ``_row``; ``strategy`` and ``floor_units``: its own)."""
    claim, name, digest, units, contract, _, _, resources, eligible, partition, unit = row
    caps = config.caps
    covered = claim.covered   # units fallback holds: the reclaimable part is that much smaller
    if floor_units > 0:
        floor = shared_floor(floor_units, table.guaranteed_of(resources, unit, partition, contract), caps, table)
        allocations = floor.allocations(_FLOOR, table)
        table.take_all(floor.pools, floor.instances)
        notes = floor.notes
        target = max(0, units - floor_units + floor.short - covered)  # floor shortfall is sought on reclaimable
    else:
        floor, allocations, notes, target = NOTHING, (), (), max(0, units - covered)

    if strategy is _COST:
        shape, placed, risky = costed_fill(target, contract, table, caps)
    else:
        shape, risky = table.reclaimable_of(resources, eligible, partition, contract), ()
        placed = shared_fill(target, shape, strategy, caps, table)
    if shape.live < caps.min_pools and strategy is not _SINGLE:
        notes += (f"only {shape.live} eligible pool(s) with capacity, fewer than {caps.min_pools}",)
    notes += risky
    if strategy is _COST:  # the price-first shadow on the weightless shape: shared by every weight's workloads
        cheapest = shared_fill(target, table.reclaimable_of(resources, eligible, partition, contract), _PRICE, caps,
                               table)
    elif strategy is _DEPTH or strategy is _CAPACITY:
        cheapest = shared_fill(target, shape, _PRICE, caps, table)  # the price-first shadow
    else:  # price-first is its own shadow; single-cheapest too
        cheapest = placed
    cheapest_cost = cheapest.cost(table)
    table.take_all(placed.pools, placed.instances)
    short = placed.short
    if short:
        notes += (f"{short} unit(s) short: caps or capacity exhausted",)
    return workload_plan(name, digest, strategy, allocations + placed.allocations(_RECLAIMABLE, table), units,
                         floor_units - floor.short, short, cheapest_cost, notes)


def _same_contract(prev: WorkloadPlan, claim: Claim, strategy: Strategy) -> bool:
    """``prev`` was made for the claim's contract version and strategy (its units may differ)."""
    return prev.strategy is strategy and prev.claim_digest.rpartition(":")[0] == claim.contract.ref


def _follow_room(kept: dict[str, WorkloadPlan], todo: list[Claim], claims: dict[str, Claim],
                 held: dict[str, int], states: Sequence[PoolState]) -> list[Claim]:
    """Kept plans follow the room: the lowest-priority kept plans using a pool they outgrew are re-planned.

    While the kept plans want more instances in a pool than it can give (free and ours, as the caller sees it),
    the lowest-priority kept plan using it is re-planned instead of kept. Relaunching a lost instance into a
    pool other tenants filled fails every pass until the pool is excluded for thrash (the replay through the
    controller: 575 failed launches and 176 exclusions a day). ``kept`` and ``held`` (instances the kept plans
    hold per pool) are updated; returns the claims to plan, in priority order.
    """
    if not kept:  # nothing kept holds room (a first plan)
        return todo
    room = {s.pool_id: s.available_instances for s in states}
    over = {pid for pid, n in held.items() if n > room.get(pid, 0)}
    if not over:
        return todo
    for name in reversed(list(kept)):
        if not over:
            break
        prev = kept[name]
        if prev.pools & over:
            del kept[name]
            todo.append(claims[name])
            for a in prev.allocations:
                held[a.pool_id] = held.get(a.pool_id, 0) - a.instances
            over = {pid for pid in over if held[pid] > room.get(pid, 0)}
    return _by_priority(todo)


def _unchanged_and_complete(prev: WorkloadPlan, claim: Claim, config: PlannerConfig) -> bool:
    c = claim.contract
    return (prev.claim_digest == claim.digest and prev.strategy is _strategy(c.placement_strategy, config)
            and prev.shortfall_units == 0 and prev.floor_units >= _floor_wanted(claim.units, c.floor_pct))


def plan(claims: Sequence[Claim], pools: Sequence[PoolState], now: datetime, previous: PlanSet | None = None,
         config: PlannerConfig | None = None) -> PlanSet:
    """Plan every claim; keep unchanged plans from ``previous``. Pure: reads nothing but its arguments.

    The cyclic garbage collector is paused while it plans: a plan allocates tens of thousands of
    small objects, none in a cycle, and most of them live until it returns, so the collections it would trigger
    (~50 a plan at 2,000 workloads) find nothing to free; the first allocation after it returns makes one.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        return _plan(claims, pools, now, previous, config)
    finally:
        if paused:
            gc.enable()


def _plan(claims: Sequence[Claim], pools: Sequence[PoolState], now: datetime, previous: PlanSet | None,
          config: PlannerConfig | None) -> PlanSet:
    config = config or PlannerConfig()
    states = tuple(pools)
    facts, static, trusted, same = _recall(summary_of(previous), states, config, bool(claims))
    old = previous.plans if previous else {}
    kept, todo, seen, rows = _sort(claims, old, config, facts, trusted, same)
    held = _held(trusted, old, kept)
    if not same:  # on the very pool states the plan set was made on, its plans fit their room by construction
        todo = _follow_room(kept, todo, seen, held, states)
    plans, settled = dict(kept), set(kept)
    if todo:
        static = static or Static(states, config.discount_threshold)
        _place(todo, rows, old, plans, settled, held, static, facts, config)
    if old:
        removed = set(old) - set(plans)
        replanned = tuple(c.workload for c in todo if plans[c.workload] is not old.get(c.workload))
    else:  # a first plan: every plan is new, made in priority order
        removed, replanned = set(), tuple(plans)
    changed = bool(replanned or removed) or previous is None
    generation = (previous.generation if previous else 0) + (1 if changed else 0)
    done = frozenset(settled)
    return PlanSet(generation=generation, made_at=now, plans=plans, replanned=replanned,
                   memory=Summary(facts, held, done, static, config, seen, done, plans))


def _recall(summary: Summary | None, states: tuple[PoolState, ...], config: PlannerConfig,
            any_claims: bool) -> tuple[Facts, Static | None, Summary | None, bool]:
    """What this pass can reuse of the previous plan set's summary.

    Returns the pool facts of this pass, the table's static part when it can be had now, the summary when it can
    be trusted for these facts, and whether the pool states are its very ones.
    """
    same = (summary is not None and summary.static is not None and summary.config == config
            and summary.static.same(states, config.discount_threshold))
    if summary is not None and same:
        return summary.facts, summary.static, summary, True
    if summary is None and any_claims:  # a first plan: the facts from the columns its table reads anyway
        static = Static(states, config.discount_threshold)
        return Facts.of_static(static, config.caps), static, None, False
    facts = Facts.of(states, config.caps)
    return facts, None, summary if summary is not None and summary.facts == facts else None, False


def _held(trusted: Summary | None, old: dict[str, WorkloadPlan], kept: dict[str, WorkloadPlan]) -> dict[str, int]:
    """Instances the kept plans hold per pool: the summary's usage less the plans not kept, else counted."""
    if not trusted:
        return usage_of(kept.values())
    held = dict(trusted.usage)
    for pid, n in usage_of(old[name] for name in old.keys() - kept.keys()).items():
        held[pid] = held.get(pid, 0) - n  # a pool where they hold no instance may not be in the usage
    return held


def _place(todo: list[Claim], rows: list[Row] | None, old: dict[str, WorkloadPlan], plans: dict[str, WorkloadPlan],
           settled: set[str], held: dict[str, int], static: Static, facts: Facts, config: PlannerConfig) -> None:
    """Plan the claims ``todo`` (in priority order) on the room the kept plans leave.

    Writes into ``plans``, ``settled`` (complete and fitting) and ``held`` (the instances the new plans take).
    """
    get = held.get
    start = [n - get(pid, 0) for n, pid in zip(static.available, static.ids, strict=True)] if held else list(
        static.available)
    table = PoolTable(static, list(start))
    for row in rows if rows is not None else map(_row, todo):
        claim, name, _, units, _, wanted, floor_pct = row[:7]
        prev = old.get(name)
        strategy = _strategy(wanted, config)
        if prev is None or not _same_contract(prev, claim, strategy):
            floor_units = _floor_wanted(units, floor_pct)
            new = plans[name] = _plan_one(row, strategy, floor_units, table, config)
            # made in this pass for this claim: it fits by construction (the pools in force, none excluded,
            # and the fill keeps its units per group within the group cap of its complete target)
            if not new.shortfall_units and new.floor_units >= floor_units:
                settled.add(name)
            continue
        fresh = replan(prev, claim, strategy, config.caps, table, static.index)
        new = plans[name] = prev if same_placement(fresh, prev) else fresh
        # a short plan is replanned next pass whatever its fit; a kept one is checked against the facts
        if _unchanged_and_complete(new, claim, config) and (new is not prev or fits_pools(new, facts)):
            settled.add(name)
    ids, end = static.ids, table.residual  # what the new plans took is what they hold
    for i in itertools.compress(range(len(start)), map(operator.ne, start, end)):
        held[ids[i]] = held.get(ids[i], 0) + start[i] - end[i]


def _sort(claims: Sequence[Claim], old: dict[str, WorkloadPlan], config: PlannerConfig, facts: Facts,
          trusted: Summary | None, same: bool
          ) -> tuple[dict[str, WorkloadPlan], list[Claim], dict[str, Claim], list[Row] | None]:
    """Plans kept and claims to plan, in priority order, and the claim object of each workload.

    A first plan (nothing before it) also gives the claims' rows, read once (``_rows``); others ``None``.
    """
    kept: dict[str, WorkloadPlan] = {}
    if not old:  # a first plan: nothing to keep
        rows = _rows(claims)
        return kept, [row[0] for row in rows], {row[1]: row[0] for row in rows}, rows
    todo: list[Claim] = []
    seen: dict[str, Claim] = {}
    checked = trusted.claims if trusted is not None and same else {}
    settled = trusted.settled if trusted is not None and same else frozenset()
    for claim in _by_priority(claims, trusted.claims if trusted is not None else None):
        name = claim.workload
        seen[name] = claim
        prev = old.get(name)
        if prev is not None and ((claim is checked.get(name) and name in settled) or (
                _unchanged_and_complete(prev, claim, config)
                and (name in trusted.fitting if trusted else fits_pools(prev, facts)))):
            kept[name] = prev
        else:
            todo.append(claim)
    return kept, todo, seen, None
