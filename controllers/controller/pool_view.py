"""The planner's view of each pool for one pass (``pool_states_for``, pure), and the memo that spares a pass
rebuilding the states of pools whose inputs did not change (``PoolMemo``, carried on the controller's memory).

Profiled in the replay through the controller: a pass built all 231 pools' states afresh — a composite score and
a ``dataclasses.replace`` each, 14k copies of immutable records in 62 passes — though between two rate cards
(5 min) nearly every pool's room, ranking and group are the same as the pass before.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from contracts.pools import Pool, PurchaseModel
from contracts.scoring import full_pool_share, without_depth
from controllers.planning import PoolState, pool_states
from controllers.planning.risk import baseline_reclaim_p

from .model import InputsInForce, Market, Observed

__all__ = ["PoolMemo", "full_pool_score", "pool_states_for", "reclaim_estimates", "refused_until_card"]

_Key = tuple[int, bool, bool, float | None, str, float | None]   # room, excluded, probation, score, group, P(reclaim)


@dataclass
class PoolMemo:
    """Each pool's state as the last pass built it, with what it was built from (values: a pass compares them, it
    does not trust identities). A memo, not a memory: emptying it changes no decision, only the time a pass takes."""

    states: dict[str, tuple[Pool, _Key, PoolState]] = field(default_factory=dict)
    # the last estimates with what they came from: the very evidence, forecast and catalogue objects (the rankings'
    # memo hands a pass the same ones until the ranking changes) and the groups, compared by value
    reclaim: tuple[object, object, object, dict[str, str], dict[str, float]] | None = None
    # everything the last pass's states were built from, and the states: a pass whose inputs equal them all gets
    # the same list without a key built per pool (most passes between two rate cards)
    last: tuple[tuple[object, ...], list[PoolState]] | None = None


def refused_until_card(refused: Mapping[str, datetime], card_at: datetime | None) -> dict[str, datetime]:
    """The capacity refusals (pool -> when, ``Memory.refused_pools``) a rate card taken at ``card_at`` has not
    answered: a card taken after a refusal shows the pool's room again (None: a card of now answers every one).
    A card of the very instant of the refusal does not: which came first is not known (one pass too cautious,
    never a launch into a pool the refusal showed full)."""
    if card_at is None:
        return {}
    return {pid: at for pid, at in refused.items() if card_at <= at}


def pool_states_for(market: Market, observed: Sequence[Observed], lost: set[str],
                    planned: Mapping[tuple[str, str], int] | None = None,
                    refused: Mapping[str, datetime] | None = None, memo: PoolMemo | None = None) -> list[PoolState]:
    """The planner's view of each pool: what is free plus what we already hold there; a lost hall lends
    nothing, guaranteed capacity included (the floor moves out); scores and groups from the inputs in force.

    A reclaimable pool's free figure comes from the rate card and is as old as the card (5 min in the simulated
    region): an instance launched after the card — ours, or another partition's — is still free on it, so the
    room is the card's free figure less every SCO instance launched since the card, plus ours. (The replay through
    the controller showed plans on room that was not there: ours counted twice, and two partitions planning the
    same room, the second's launches failing until the pool was excluded for thrash.) Reservations and quota
    are read live, so every instance of ours counts there. Notified instances never count: their room goes with
    them. The card's free figure less the launches since it is never taken below zero: more launched since than
    the card showed free means room was freed since (a reclaim, terminations), and the instances of ours there are
    there — a negative figure made the room less than what we hold, and the planner moved running instances out
    of the pool (the fleet simulation after its hall reclaim).

    A pool excluded because launches were refused (``inputs.full``) is full, not dangerous: it stays eligible
    with no room beyond what we hold there, so the planner keeps the units it holds and places no new ones. In a
    full pool and in every reclaimable pool, what we hold counts only as far as the previous plans (``planned``:
    instances per workload and pool) want it: a workload's surplus there keeps its room until it is terminated
    (three idle passes at least, or longer behind the breaker), so it is not room for another's plan (the fleet
    simulation at 2,000: with the surplus's termination held by a tripped breaker, the planner gave its room to
    other workloads, whose launches were refused every pass until the partition's whole token budget went on them;
    the replay of seed 1 through the controller: 39 of a day's 83 refused launches went into pools whose card
    showed no room, the room being our own surplus). A pool being reclaimed (``inputs.excluded``) is ineligible:
    its units move away.

    A reclaimable pool that refused a launch of ours for capacity (``refused``: pool -> when, the ones no rate card
    taken since has answered, ``refused_until_card``) has its room treated the same way from the first refusal,
    not only once the exclusion watcher has seen three: the card it was planned on is older than the refusal and
    still counts room other tenants took (at 20,000, 1,654 launches refused for capacity, each a token
    of the partition's share, relaunched or re-planned into the pool pass after pass). Its score is left alone:
    the refusal is a fact about room, not about the pool's risk.

    ``memo`` (the controller's, ``Memory.pools``): each pool's state is built again only when what it is built
    from — its room, exclusion, probation, score and group — differs from the last pass's; otherwise the last
    pass's (immutable) state is the answer. Level-triggered still: every input is read and compared each pass."""
    available, since = _room(market, observed, lost, planned, refused)
    inputs = market.inputs
    excluded = inputs.excluded | lost
    scores = {pid: full_pool_score(inputs.scores.get(pid), inputs.depth.get(pid), full_since=inputs.full_since.get(pid),
                                   card_at=market.free_at, free_now=market.free.get(pid, 0) - since[pid])
              for pid in inputs.full}
    memo = memo if memo is not None else PoolMemo()
    reclaim_p = _reclaim_estimates_memo(inputs, market.pools, memo)
    built_from = (market.pools, available, excluded, inputs.probation, scores, inputs.scores, inputs.groups,
                  reclaim_p)
    if memo.last is not None and _same(memo.last[0], built_from):
        return list(memo.last[1])
    before, now = memo.states, {}
    out = []
    for pid, p in market.pools.items():
        score = scores.get(pid)
        key = (available[pid], pid in excluded, pid in inputs.probation,
               score if score is not None else inputs.scores.get(pid), inputs.groups.get(pid, ""), reclaim_p.get(pid))
        last = before.get(pid)
        st = last[2] if last is not None and last[0] is p and last[1] == key else _state(p, key)
        now[pid] = (p, key, st)
        out.append(st)
    memo.states = now
    memo.last = (built_from, out)
    return list(out)


def _same(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    """The same inputs: each the very object or equal to it (the catalogue is compared by identity only, as the
    per-pool memo does)."""
    return a[0] is b[0] and all(x is y or x == y for x, y in zip(a[1:], b[1:], strict=True))


def _state(p: Pool, key: _Key) -> PoolState:
    """One pool's state: the composite score of its room unless a score is in force, its group and its P(reclaim
    within 1 h) (``reclaim_estimates``)."""
    room, excluded, probation, score, group, reclaim_p = key
    (st,) = pool_states([p], {p.pool_id: room}, excluded=(p.pool_id,) if excluded else (),
                        probation=(p.pool_id,) if probation else ())
    return replace(st, score=st.score if score is None else score, group=group, reclaim_p_1h=reclaim_p)


def reclaim_estimates(inputs: InputsInForce, pools: Mapping[str, Pool]) -> dict[str, float]:
    """P(reclaim within 1 h) per pool for expected-cost placement: the ranking's forecast where it publishes one,
    else the baseline from the ranking's own evidence (reclaims and instance-hours per pool, shrunk towards the
    pool's correlation group: ``planning.risk.baseline_reclaim_p``). A pool the ranking does not carry gets
    neither (the planner falls back on the catalogue's rate). Pure."""
    groups = {pid: inputs.groups.get(pid) or p.aggregate for pid, p in pools.items()}
    baseline = baseline_reclaim_p(inputs.exposure, groups) if inputs.exposure else {}
    return {**baseline, **inputs.forecast}


def _reclaim_estimates_memo(inputs: InputsInForce, pools: Mapping[str, Pool], memo: PoolMemo) -> dict[str, float]:
    """``reclaim_estimates``, or the memo's when its evidence, forecast and catalogue are the very objects and the
    groups the same (the estimates are a pure function of them)."""
    last = memo.reclaim
    if (last is not None and last[0] is inputs.exposure and last[1] is inputs.forecast and last[2] is pools
            and last[3] == inputs.groups):
        return last[4]
    out = reclaim_estimates(inputs, pools)
    memo.reclaim = (inputs.exposure, inputs.forecast, pools, dict(inputs.groups), out)
    return out


def _room(market: Market, observed: Sequence[Observed], lost: set[str], planned: Mapping[tuple[str, str], int] | None,
          refused: Mapping[str, datetime] | None) -> tuple[dict[str, int], dict[str, int]]:
    """Each pool's room (free and ours, ``pool_states_for``) and the launches since the rate card per pool."""
    ours: dict[str, int] = defaultdict(int)
    held: dict[tuple[str, str], int] = defaultdict(int)
    since: dict[str, int] = defaultdict(int, market.others_since_card)   # launched after the rate card
    for o in observed:
        if o.live:
            ours[o.pool] += 1
            held[(o.workload, o.pool)] += 1
            since[o.pool] += 1 if _after(o.launched_at, market.free_at) else 0
    inputs = market.inputs
    full = inputs.full | {pid for pid in refused or {} if pid in market.pools
                          and market.pools[pid].purchase_model is PurchaseModel.RECLAIMABLE}
    if planned is not None:   # a reclaimable pool: what we hold there as far as the previous plans want it
        counted = full | {pid for pid, p in market.pools.items() if p.purchase_model is PurchaseModel.RECLAIMABLE}
        wanted: dict[str, int] = defaultdict(int)
        for (w, pid), n in held.items():
            if pid in counted:
                wanted[pid] += min(n, planned.get((w, pid), 0))
        ours.update({pid: wanted[pid] for pid in counted})
    available = {}
    for pid, p in market.pools.items():
        if pid in full:
            free = 0
        elif p.purchase_model is PurchaseModel.COMMITTED:
            free = market.reserved.get(pid, 0)
        elif p.purchase_model is PurchaseModel.GUARANTEED:
            free = market.free.get(pid, market.quota_free)
        else:   # never less than none: more launched since the card than it showed free means room freed since
            free = max(0, market.free.get(pid, 0) - since[pid])
        available[pid] = 0 if pid in lost else max(0, free + ours[pid])
    return available, since


def full_pool_score(score: float | None, depth: tuple[float, float] | None, *, full_since: datetime | None,
                    card_at: datetime | None, free_now: int) -> float | None:
    """The score the planner uses for a pool excluded as full (launches refused; ``full_since``: when): the ranking's
    score at zero depth (``depth``: its forward share and quota headroom) until its room is seen again — a rate
    card taken after the refusals showing free room (``free_now``: the card's free count less the launches since
    it). The ranking in force may be from a card older than the refusals, which still counts the room the tenants
    who filled the pool have taken. None when there is no ranking (the planner's own score stands). Pure."""
    if score is None or depth is None:
        return score
    share, headroom = depth
    # when it was excluded is not known: no card counts as taken after it
    if full_since is not None and full_pool_share(share, full_since=full_since, card_at=card_at, free_now=free_now):
        return score
    return without_depth(score, share, headroom)


def _after(launched_at: datetime | None, card_at: datetime | None) -> bool:
    """Launched at or after the rate card's time: the card still counts its room as free (a launch in the same
    instant as the card is taken as after it: the error is one instance too few, never one too many)."""
    return launched_at is not None and card_at is not None and launched_at >= card_at


