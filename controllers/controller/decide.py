"""Decide, pure (ADR-10, ADR-12): from what a pass observed, what the partition should look like and what the
leader remembers, the actions of this pass — nothing read, nothing written, the clock passed in.

``begin`` starts a pass from its first look: a new lease tenure is a restart (read-only again), a partition
that never made a plan and holds nothing is a first placement (no recovery ramp), the breaker row is the
truth, and when many running instances vanished from the listing without a notice the pass fails static
(opens the breaker, acts on nothing). ``decide`` does the rest: the floor keeper, revocations of what
is gone, refused work, the plan, the diff, the fallback arbiter, the safety gate (read-only cycles, recovery
share tier 1 first, the termination breaker, three idle observations, tags = row) and the floor check.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from controllers.planning import Allocation, PlanSet, PoolState, WorkloadPlan, plan
from controllers.planning import Purpose as PlanPurpose

from .approval_judge import judge_answers, with_verdicts
from .breaker import Safety
from .claims import Normalised, normalised
from .decision import (
    Action,
    Decision,
    Desired,
    Memory,
    OpenBreaker,
    Place,
    Publish,
    RecordVerdict,
    Revoke,
    WriteClaims,
    WritePlans,
)
from .fallback_pass import covered_claims, decide_fallback, fallback_deadlines, needs, requeue_after
from .losses import no_notice_losses
from .model import Glance, Launch, Note, Observation, Observed, Purpose, SlotKey, Terminate
from .pool_view import full_pool_score, pool_states_for, refused_until_card
from .reconcile import desired_slots, diff, interleave, unclaimed_workloads, uncovered_instances

__all__ = ["begin", "decide", "full_pool_score", "pool_states_for", "refused_until_card"]


def begin(glance: Glance, desired: Desired, memory: Memory, now: datetime) -> tuple[Memory, Decision | None]:
    """The memory this pass starts from, and a decision to hold everything when the listing lost too much."""
    s = desired.settings
    mem = memory.copy()
    if mem.tenure is not None and glance.tenure != mem.tenure:  # lost the lease and took it back: a new start
        mem.safety = Safety(s.partition, s.safety)
    mem.tenure = glance.tenure
    if mem.previous is None:
        mem.previous = PlanSet(generation=glance.base_generation or 0, made_at=now, plans={})
        if not glance.base_generation and not glance.instances and not glance.rows:
            # a partition's first placement: no plan was ever made, nothing runs, nothing to catch up on. The
            # recovery ramp bounds a return (ADR-12); here only the read-only cycles and the token budget apply
            mem.safety.recovering = False
    if glance.breaker_open:  # the breaker row is the truth: an operator closes it (reset-breaker)
        mem.safety.tripped = True
    elif mem.safety.tripped:
        mem.safety.reset()
    return mem, _mass_loss(glance, desired, mem)


def _mass_loss(glance: Glance, desired: Desired, mem: Memory) -> Decision | None:
    """Fail static (ADR-12): when many running instances vanish from the listing without a notice in one
    pass — a provider listing glitch, lost tags, or an unannounced hall loss — do not relaunch them all, do
    not revoke or terminate: open the breaker, raise the alarm and hold until the listing agrees again."""
    s = desired.settings
    listed = {o.instance_id for o in glance.instances}
    running = [iid for iid, r in glance.rows.items() if r["state"] in ("running", "launching")]
    vanished = [iid for iid in running if iid not in listed]
    if len(vanished) < max(s.mass_loss_min, math.ceil(len(running) * s.mass_loss_share)):
        mem.mass_alarm = False
        return None
    actions: list[Action] = []
    if not mem.mass_alarm:
        mem.mass_alarm = True
        mem.safety.tripped = True
        mem.safety.trip_reason = (f"{len(vanished)} of {len(running)} running instance(s) vanished from the "
                                  "provider's listing without a notice; holding all actions")
        actions.append(OpenBreaker(mem.safety.trip_reason))
        actions.append(Publish(Note("breaker-tripped", mem.safety.trip_reason, attributes={
            "partition": s.partition, "vanished": len(vanished), "running": len(running), "kind": "mass-loss"})))
    generation = mem.previous.generation if mem.previous else 0
    return Decision(tuple(actions), mem, True, generation, len(vanished))


def decide(seen: Observation, desired: Desired, memory: Memory, now: datetime) -> Decision:
    """The actions of one pass, in the order ``apply`` executes them, and the memory after it."""
    s = desired.settings
    mem = memory.copy()
    observed = seen.instances
    actions: list[Action] = [Publish(n) for n in mem.floor.update(observed, now)]
    actions += [Revoke(g.instance_id, g.workload or None, g.pool, "instance gone from the provider's listing")
                for g in seen.gone]
    actions += [Revoke(g.instance_id, g.workload or None, g.pool, f"retry: the revocation after it ended ({g.was}) "
                       "failed") for g in seen.unrevoked]
    actions += [Publish(n) for n in no_notice_losses(seen.gone, desired, now)]
    work = normalised(seen.items, desired.contracts, mem.work)
    for item, note in work.refusals:
        if item.item_id not in mem.refused:
            mem.refused.add(item.item_id)
            actions.append(Publish(note))
    mem.refused_pools = refused_until_card(mem.refused_pools, seen.market.free_at)
    lost = mem.floor.lost_pools({pid: p.hall for pid, p in seen.market.pools.items()})
    states = pool_states_for(seen.market, observed, lost, _planned(mem.previous), mem.refused_pools, mem.pools)
    covering = covered_claims(work.claims, observed, seen.market.pools, mem.returning)
    planned = _plan(work if covering is work.claims else Normalised(covering, work.refusals), states, desired, mem,
                    now, observed, lost)
    actions += [WritePlans(planned.plans, planned.generation, tuple(planned.replanned)), _claims(seen, work, planned)]
    tiers = {cl.workload: str(cl.contract.base_tier) for cl in work.claims}
    fallback_live: dict[SlotKey, int] = defaultdict(int)
    for o in observed:
        if o.purpose is Purpose.FALLBACK and o.live:
            fallback_live[o.key] += 1
    slots = desired_slots(planned.plans, fallback_live)
    d = diff(slots, observed, partition=s.partition, generation=planned.generation, tiers=tiers)
    verdicts = judge_answers(seen.answers, desired.contract, now, keys=dict(s.approver_keys),
                             timeout=s.fallback.approval_timeout)
    actions += [RecordVerdict(a, v) for a, v in verdicts]       # before any reservation that counts a grant
    wanted = needs(planned, observed, states, seen.glance.notices, desired, mem, now,
                   committed_eur=seen.committed_eur, approvals=with_verdicts(seen.approvals, verdicts))
    fb = decide_fallback(wanted, observed, desired, mem, now, generation=planned.generation,
                         launched_last_minute=seen.fallback_launched_last_minute, dry=mem.safety.read_only)
    actions += fb.actions
    agree = {o.instance_id: _agrees(r, o) for o in observed if (r := seen.rows.get(o.instance_id))}
    idle = {iid: int(r["idle"]) for iid, r in seen.rows.items()}
    fleet = max(sum(1 for o in observed if o.live), sum(slots.values()))
    gated = mem.safety.gate(d.launches, [*d.surplus, *fb.returns], fleet_size=fleet, idle=idle, agree=agree, now=now)
    actions += [Publish(n) for n in gated.notes]
    if gated.notes and mem.safety.tripped:
        actions.append(OpenBreaker(mem.safety.trip_reason))
    if not gated.read_only:
        actions += _acts(gated.launches, gated.terminations, observed,
                         uncovered_instances(slots, observed, partition=s.partition),
                         unclaimed_workloads(work.claims, observed, seen.market.pools, partition=s.partition))
        actions += [Publish(n) for n in mem.floor.check(planned.plans, observed, now)]
    deadlines = fallback_deadlines(wanted, desired) + [t + s.floor.hall_memory for t in mem.floor.lost.values()]
    deadlines += [t for t in (seen.market.inputs.changes_at, seen.glance.notices_age_at) if t is not None]
    held = gated.held_launches + gated.held_terminations
    return Decision(tuple(actions), mem, gated.read_only, planned.generation, held, gated,
                    requeue_after(deadlines, now),
                    # a return chosen now changes what the next pass plans (its units stop being covered)
                    _quiet(actions, seen, planned, held, gated.read_only) and not fb.decisions.returns)


def _quiet(actions: Sequence[Action], seen: Observation, planned: PlanSet, held: int, read_only: bool) -> bool:
    """Whether a pass decided nothing and its look recorded nothing: no action beyond rewriting the claims and the
    plans of no re-planned workload, nothing held or read-only, nothing gone, no row changed (no idle observation
    counted, no state, no adoption). The pass after such a pass, on the same inputs, decides the same until a
    timed rule's deadline (``requeue_after``): ``Controller.due``."""
    return (not read_only and not held and not planned.replanned and not seen.gone and not seen.unrevoked
            and all(isinstance(a, WriteClaims | WritePlans) for a in actions) and seen.rows == seen.glance.rows)


def _planned(previous: PlanSet | None) -> dict[tuple[str, str], int] | None:
    """Instances the previous plans want, per (workload, pool); None before any plan."""
    if previous is None or not previous.plans:
        return None
    out: dict[tuple[str, str], int] = defaultdict(int)
    for w, p in previous.plans.items():
        for a in p.allocations:
            out[(w, a.pool_id)] += a.instances
    return out


def _plan(work: Normalised, states: Sequence[PoolState], desired: Desired, mem: Memory, now: datetime,
          observed: Sequence[Observed] = (), lost: frozenset[str] | set[str] = frozenset()) -> PlanSet:
    """Plan on the previous plan set; workloads with anything in a lost hall (``lost``: its pools) are re-planned
    now, from their plans less the lost hall's allocations (short by those units: the planner keeps what they hold
    in the other halls and places the rest there); in a pool whose room no longer covers what the previous plans
    want there, what they want beyond what they hold yields (``unlaunched_yield``).

    (Dropping an affected plan, as before, re-planned it from scratch on the ranking in force: in the fleet
    simulation's hall reclaim every such workload's running instances in the *other* halls moved too, ~80 % of a
    partition wanted terminated at once, and each partition whose breaker had not tripped yet tripped then.)"""
    prev = mem.previous or PlanSet(generation=0, made_at=now, plans={})
    if lost and any(p.pools & lost for p in prev.plans.values()):   # else the very object: the planner's memo
        prev = replace(prev, plans={w: _cut(p, lost) for w, p in prev.plans.items()})
    prev = unlaunched_yield(prev, states, observed)
    planned = plan(work.claims, states, now, prev, desired.settings.planner)
    mem.previous = planned
    return planned


def _cut(p: WorkloadPlan, pools: Collection[str]) -> WorkloadPlan:
    """``p`` without its allocations in ``pools``, short by their units (floor units off the floor too)."""
    gone = [a for a in p.allocations if a.pool_id in pools]
    if not gone:
        return p
    return _shortened(p, tuple(a for a in p.allocations if a.pool_id not in pools), sum(a.units for a in gone),
                      sum(a.units for a in gone if a.purpose is PlanPurpose.FLOOR))


def _shortened(p: WorkloadPlan, kept: tuple[Allocation, ...], cut: int, floor_cut: int) -> WorkloadPlan:
    """``p`` holding only ``kept``: ``cut`` units more short, ``floor_cut`` of them off its floor.

    What a plan becomes when the controller takes allocations out of it between planner passes (a lost hall,
    room that was never there): the planner then re-plans it, keeping what it holds and placing the rest."""
    return replace(p, allocations=kept, shortfall_units=p.shortfall_units + cut,
                   floor_units=max(0, p.floor_units - floor_cut))


def unlaunched_yield(prev: PlanSet, states: Sequence[PoolState], observed: Sequence[Observed]) -> PlanSet:
    """The previous plans, where a pool's room (``states``: free and ours) is less than the instances they want
    there, with each plan's allocation there cut to the instances it holds there (live, same purpose) and the
    units cut recorded as short — so the planner re-plans those plans (keeping what they hold, placing the rest
    where there is room) and no running instance is moved for them. Pure; the very object when nothing is cut.

    Why (traced in the fleet simulation): when kept plans want more than a pool gives, the planner
    re-plans the lowest-priority of them on the room the others leave. The others' wants included instances never
    launched (refused, or room taken by another partition since the rate card), so a lower-priority workload's
    *running* instances there were dropped for a higher-priority one's unlaunched allocation that could not be
    launched either — surplus. In a pool excluded as full the room is what the plans hold there, so the next pass
    found it smaller again and evicted the next workload: the pool's running units moved a workload a pass, and
    every partition's breaker tripped on the surplus (10 % of the partition wanted terminated at once)."""
    room = {st.pool_id: st.available_instances for st in states if not st.excluded}
    wanted: dict[str, int] = defaultdict(int)
    for p in prev.plans.values():
        for a in p.allocations:
            wanted[a.pool_id] += a.instances
    over = {pid for pid, n in wanted.items() if pid in room and n > room[pid]}
    if not over:
        return prev
    held: dict[tuple[str, str, bool], int] = defaultdict(int)
    for o in observed:
        if o.live and o.pool in over:
            held[(o.workload, o.pool, o.purpose is Purpose.FLOOR)] += 1
    plans: dict[str, WorkloadPlan] = {}
    changed = False
    for w, p in prev.plans.items():
        kept: list[Allocation] = []
        cut = floor_cut = 0
        for a in p.allocations:
            floor = a.purpose is PlanPurpose.FLOOR
            have = held.get((w, a.pool_id, floor), 0)
            if a.pool_id not in over or a.instances <= have:
                kept.append(a)
                continue
            per = -(-a.units // a.instances) if a.instances else 0      # units an instance holds, at most
            units = min(a.units, have * per)
            cut += a.units - units
            floor_cut += (a.units - units) if floor else 0
            if have:
                kept.append(replace(a, units=units, instances=have))
        if kept != list(p.allocations):
            changed = True
            p = _shortened(p, tuple(kept), cut, floor_cut)
        plans[w] = p
    return replace(prev, plans=plans) if changed else prev


def _claims(seen: Observation, work: Normalised, planned: PlanSet) -> WriteClaims:
    sources = {i.contract_ref: i.source for i in seen.items if i.contract_ref}
    return WriteClaims(
        tuple((cl.workload, sources.get(cl.contract.ref, "scheduler"), cl.units,
               "pending" if planned.plans[cl.workload].shortfall_units else "placed") for cl in work.claims),
        tuple((item.item_id, item.source, item.contract_ref or "", n.cause) for item, n in work.refusals))


def _acts(launches: Sequence[Launch], terminations: Sequence[Terminate], observed: Sequence[Observed],
          uncovered: Mapping[tuple[str, bool], int], unclaimed: Collection[str] = ()) -> list[Action]:
    """The pass's launches (``reconcile.interleave``: uncovered claims, then the rest of the deficit, then moves;
    fewest held first within each), then terminations."""
    notified: dict[SlotKey, list[str]] = defaultdict(list)
    held: dict[str, int] = defaultdict(int)
    for o in observed:
        if o.status == "notified":
            notified[o.key].append(o.instance_id)
        if o.live:
            held[o.workload] += 1
    return [*(Place(a, tuple(notified.get(a.key, []))) for a in interleave(launches, held, uncovered, unclaimed)),
            *terminations]


def _agrees(row: Mapping[str, Any], o: Observed) -> bool:
    """Termination needs the provider tags and the database row to agree (ADR-11)."""
    return (row["workload"] == o.workload and row["pool"] == o.pool and row["partition"] == o.partition
            and int(row["generation"] or 0) == o.generation)
