"""The fallback arbiter's decision for one pass (ADR-23, ADR-24), pure: each workload's ``Need`` from the plan,
the instances, the notices in the breach window and the ledger; ``fallback.arbitrate``; and the actions —
launches within the spend cap (``apply`` reserves before it launches), approval requests beyond it, shortfall
when the approver has not answered in 15 minutes, and returns (termination candidates for the safety gate).

Fallback does the work it was launched for: before the plan is made, ``covered_claims`` takes the units live
fallback holds off each claim's reclaimable part, and a return moves them back — chosen in one pass, offered
for termination from the next, once the plan has placed their units on reclaimable capacity (ADR-24: return
*moves* fallback capacity, a fifth an hour, after an hour of health).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from contracts.pools import Pool, PurchaseModel
from contracts.schema import Contract
from controllers.planning import Claim, PlanSet, PoolState, WorkloadPlan, units_per_instance

from .decision import Action, AskApproval, Desired, Memory, RecordShortfall, StartFallback
from .fallback import Approval, FallbackDecisions, GuaranteedOption, Need, arbitrate
from .model import Observed, Purpose, Terminate

__all__ = ["FallbackPass", "covered_claims", "decide_fallback", "fallback_deadlines", "interruption_rate_pct_h",
           "needs"]


@dataclass(frozen=True)
class FallbackPass:
    actions: tuple[Action, ...]
    returns: tuple[Terminate, ...]          # candidates: the safety gate and the idle rule decide
    decisions: FallbackDecisions


@dataclass(frozen=True)
class _Ledger:
    committed_eur: Mapping[str, Decimal]
    approvals: Mapping[str, Approval]


def interruption_rate_pct_h(notices: int, live: int, window: timedelta) -> float:
    """The measured interruption rate of a workload: notices in ``window`` per live instance (at least one),
    in % per hour — what the arbiter compares with the contract's declared rate (and the breach alert too)."""
    return 100.0 * notices / max(1, live) / (window.total_seconds() / 3600)


def covered_claims(claims: tuple[Claim, ...], observed: Sequence[Observed], pools: Mapping[str, Pool],
                   returning: Mapping[str, frozenset[str]]) -> tuple[Claim, ...]:
    """``claims`` with the units their live fallback instances hold (``Claim.covered``), those being returned aside.

    Fallback launched for a shortfall or a breach does that work until it is returned (ADR-24: after an hour of
    health, a fifth an hour): the plan's reclaimable part leaves those units to it instead of buying them again
    when room comes back — which held guaranteed and reclaimable capacity for the same units, the fallback doing
    nothing, for the hour or more a return waits. An instance chosen for return no longer covers: the plan places
    its units on reclaimable capacity while it is still there. A claim nothing covers is the very object, and so
    are ``claims`` when nothing covers any.
    """
    held: dict[str, list[Observed]] = defaultdict(list)
    for o in observed:
        if _covers(o, returning.get(o.workload, frozenset())):
            held[o.workload].append(o)
    if not held:
        return claims
    out = []
    for claim in claims:
        mine = held.get(claim.workload)
        if mine:
            covered = sum(units_per_instance(pools[o.pool], claim.contract) for o in mine if o.pool in pools)
            claim = Claim(claim.contract, claim.units, covered) if covered else claim
        out.append(claim)
    return tuple(out)


def _covers(o: Observed, returning: frozenset[str]) -> bool:
    """A live fallback instance not being returned: it does its workload's work (``covered_claims``)."""
    return o.purpose is Purpose.FALLBACK and o.live and o.instance_id not in returning


def needs(planned: PlanSet, observed: Sequence[Observed], states: Sequence[PoolState], notices: Mapping[str, int],
          desired: Desired, memory: Memory, now: datetime, *, committed_eur: Mapping[str, Decimal],
          approvals: Mapping[str, Approval]) -> list[Need]:
    """One ``Need`` per planned workload with a contract; updates ``memory``'s health and shortfall clocks."""
    by_workload: dict[str, list[Observed]] = defaultdict(list)
    for o in observed:
        by_workload[o.workload].append(o)
    ledger = _Ledger(committed_eur, approvals)
    pools = _Pools({st.pool_id: st for st in states},
                   tuple(st for st in states if st.pool.purchase_model is PurchaseModel.GUARANTEED))
    out = []
    for w, p in planned.plans.items():
        contract = desired.contract(w)
        if contract is not None:
            out.append(_need(w, p, contract, by_workload.get(w, []), pools, notices.get(w, 0), desired, memory,
                             ledger, now))
    return out


@dataclass(frozen=True)
class _Pools:
    """The pass's pool states by id, and the guaranteed ones in order: what a workload's need reads of them (its
    held pools and the guaranteed options), found once a pass rather than in every state for every workload."""

    by_id: Mapping[str, PoolState]
    guaranteed: tuple[PoolState, ...]


def _need(w: str, p: WorkloadPlan, contract: Contract, mine: Sequence[Observed], pools: _Pools,
          notices: int, desired: Desired, memory: Memory, ledger: _Ledger, now: datetime) -> Need:
    window = desired.settings.breach_window
    rate = interruption_rate_pct_h(notices, sum(1 for o in mine if o.live and o.purpose is not Purpose.FALLBACK),
                                   window)
    declared = float(contract.max_interruption_rate_pct_h)
    breach = rate > declared
    if rate < declared / 2:
        memory.healthy_since.setdefault(w, now)
    else:
        memory.healthy_since.pop(w, None)
    # units a pool's instance holds: only where it is read (held, guaranteed)
    per = {pid: units_per_instance(st.pool, contract) for pid in {o.pool for o in mine}
           if (st := pools.by_id.get(pid)) is not None}
    per.update({st.pool_id: units_per_instance(st.pool, contract) for st in pools.guaranteed})
    notified_units = sum(per.get(o.pool, 1) for o in mine if o.status == "notified")
    if p.shortfall_units > 0:
        memory.short_since.setdefault(w, now)
    else:
        memory.short_since.pop(w, None)
    # the plan's shortfall is net of what fallback covers (``covered_claims``); a breach wants its notified units
    # on fallback, less what fallback already holds
    returning = memory.returning.get(w, frozenset())
    fb_units = sum(per.get(o.pool, 1) for o in mine if _covers(o, returning))
    wanted = p.shortfall_units + max(0, (notified_units if breach else 0) - fb_units)
    options = tuple(GuaranteedOption(st.pool_id, st.pool.rate_eur_h, per[st.pool_id], st.available_instances)
                    for st in pools.guaranteed if not st.excluded and per.get(st.pool_id, 0) > 0
                    and st.available_instances > 0)
    return Need(
        workload=w, tier=str(contract.base_tier), units_wanted=max(0, wanted), short_since=memory.short_since.get(w),
        breach=breach, deadline_risk=bool(contract.deadline) and p.shortfall_units > 0,
        spend_cap_eur=contract.spend_cap_24h_eur, committed_eur=ledger.committed_eur.get(w, Decimal(0)),
        approver=contract.approver, options=options,
        fallback_running=tuple((o.instance_id, o.launched_at or now) for o in mine
                               if o.purpose is Purpose.FALLBACK and o.live),
        healthy_since=memory.healthy_since.get(w), last_return_at=memory.last_return.get(w),
        approval=ledger.approvals.get(w), policy=str(contract.fallback_policy))


def decide_fallback(wanted: Sequence[Need], observed: Sequence[Observed], desired: Desired, memory: Memory,
                    now: datetime, *, generation: int, launched_last_minute: int, dry: bool) -> FallbackPass:
    """Arbitrate and turn the decisions into actions; ``dry`` (a read-only cycle) decides but does nothing."""
    config = desired.settings.fallback
    left = max(0, config.launches_per_minute - launched_last_minute)
    decisions = arbitrate(wanted, now, launches_left=left, config=config)
    if dry:
        return FallbackPass((), (), decisions)
    actions: list[Action] = []
    for fl in decisions.launches:
        contract = desired.contract(fl.workload)
        assert contract is not None
        actions.append(StartFallback(fl, contract.spend_cap_24h_eur, contract.approver, generation))
    actions.extend(AskApproval(ar) for ar in decisions.approvals)
    actions.extend(RecordShortfall(w, units, cause) for w, units, cause in decisions.shortfalls)
    # the returns chosen in an earlier pass are offered now; those chosen in this one wait a pass: this pass's
    # plan counted them as covering, the next one places their units before they go
    returns = _returns(wanted, {o.instance_id: o for o in observed}, memory)
    for w, iid in decisions.returns:
        memory.last_return[w] = now
        memory.returning[w] = memory.returning.get(w, frozenset()) | {iid}
    return FallbackPass(tuple(actions), returns, decisions)


def _returns(wanted: Sequence[Need], by_id: Mapping[str, Observed], memory: Memory) -> tuple[Terminate, ...]:
    """The instances being returned that are still there, offered for termination every pass until they go
    (level-triggered: the safety gate and the idle rule may hold one for a while). A workload whose plan is short
    again keeps its fallback: the return is called off and the instances cover its units once more."""
    short = {n.workload for n in wanted if n.units_wanted > 0 or n.short_since is not None}
    out: list[Terminate] = []
    for w, ids in sorted(memory.returning.items()):
        live = frozenset(i for i in ids if (o := by_id.get(i)) is not None and o.live)
        if not live or w in short:
            del memory.returning[w]
            continue
        memory.returning[w] = live
        out.extend(Terminate(by_id[i], "return", by_id[i].tier) for i in sorted(live))
    return tuple(out)


def fallback_deadlines(wanted: Sequence[Need], desired: Desired) -> list[datetime]:
    """When a timed fallback rule next fires with nothing else changing: 5 min of shortfall, an approval's 15 min,
    60 min of health before a return, an hour between returns."""
    config = desired.settings.fallback
    out: list[datetime] = []
    for n in wanted:
        if n.units_wanted > 0 and n.short_since is not None:
            out.append(n.short_since + config.shortfall_after)
        if n.approval is not None and n.approval.state == "pending":
            out.append(n.approval.requested_at + config.approval_timeout)
        if n.fallback_running and n.healthy_since is not None:
            out.append(max(n.healthy_since + config.healthy_for,
                           (n.last_return_at + config.return_every) if n.last_return_at else n.healthy_since))
    return out


def requeue_after(deadlines: Sequence[datetime], now: datetime) -> timedelta | None:
    """The wait until the nearest future deadline, or None when no timed rule is pending."""
    ahead = [d - now for d in deadlines if d > now]
    return min(ahead) if ahead else None
