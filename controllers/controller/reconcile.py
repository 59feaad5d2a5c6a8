"""The reconciler's pure diff (ADR-10): desired slots (plan in force + fallback) against the instances the
provider lists with our tags. Launch what is missing, one multi-create per slot; mark the rest surplus.

Level-triggered: nothing here remembers what it asked for before. A launch that reached the provider shows up
in the next listing and is not asked for again, whatever happened to the process in between; the stable
``launch_key`` (partition/workload/pool/purpose/generation/have) names the same intent on a repeated pass.
Notified instances do not count toward the plan, so a replacement is launched while they drain (ADR-09).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from contracts.pools import Pool
from controllers.planning import Claim, WorkloadPlan, units_per_instance
from controllers.planning import Purpose as PlanPurpose

from .breaker import tier_rank
from .model import Launch, Observed, Purpose, SlotKey, Terminate

__all__ = ["Diff", "desired_slots", "diff", "interleave", "unclaimed_workloads", "uncovered_instances"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Diff:
    launches: tuple[Launch, ...]
    surplus: tuple[Terminate, ...]     # candidates only: the breaker and the idle rule decide

    @property
    def launch_count(self) -> int:
        """The instances the launches ask for, all slots together."""
        return sum(a.count for a in self.launches)


def desired_slots(plans: Mapping[str, WorkloadPlan], extra: Mapping[SlotKey, int] | None = None) -> dict[SlotKey, int]:
    """Instances wanted per slot: the plan's allocations (floor and reclaimable) plus ``extra`` (fallback)."""
    out: dict[SlotKey, int] = defaultdict(int)
    for p in plans.values():
        for a in p.allocations:
            purpose = Purpose.FLOOR if a.purpose is PlanPurpose.FLOOR else Purpose.RECLAIMABLE
            out[SlotKey(p.workload, a.pool_id, purpose)] += a.instances
    for key, n in (extra or {}).items():
        out[key] += n
    return {k: v for k, v in out.items() if v > 0}


def diff(desired: Mapping[SlotKey, int], observed: Sequence[Observed], *, partition: str, generation: int,
         tiers: Mapping[str, str] | None = None, cause: str = "plan") -> Diff:
    """Launches for missing instances; surplus (newest first within a slot) for the rest.

    Only instances of ``partition`` are considered: other partitions have their own leader."""
    tiers = tiers or {}
    live: dict[SlotKey, list[Observed]] = defaultdict(list)
    for o in observed:
        if o.partition == partition and o.live:
            live[o.key].append(o)
    launches: list[Launch] = []
    surplus: list[Terminate] = []
    # in SlotKey's order (its fields in turn), compared as tuples: not a Python ``__lt__`` a comparison
    for key in sorted(set(desired) | set(live), key=lambda k: (k.workload, k.pool, k.purpose)):
        want = desired.get(key, 0)
        have = live.get(key, [])
        tier = tiers.get(key.workload, "")
        if want > len(have):
            launches.append(Launch(
                key=key, count=want - len(have), partition=partition, generation=generation, tier=tier,
                cause=cause,
                launch_key=f"{partition}/{key.workload}/{key.pool}/{key.purpose}/g{generation}/{len(have)}"))
        elif len(have) > want:
            newest_first = sorted(have, key=lambda o: (o.launched_at or _EPOCH, o.instance_id), reverse=True)
            reason = "surplus" if key.workload in tiers else "orphan"
            surplus.extend(Terminate(o, reason, tier) for o in newest_first[: len(have) - want])
    return Diff(tuple(launches), tuple(surplus))


def interleave(launches: Sequence[Launch], held: Mapping[str, int] | None = None,
               uncovered: Mapping[tuple[str, bool], int] | None = None,
               unclaimed: Collection[str] = ()) -> list[Launch]:
    """The launches in the order a pass makes them: deficit first, then in rounds, fewest held first.

    **Deficit first**: a launch that covers a workload's *uncovered* instances (``uncovered``, per
    workload and floor or not: the instances its slots want less its live ones — a new claim, the replacement of a
    noticed instance, a floor short) goes before every launch that only *moves* instances between pools (the
    workload already holds as many live instances as it wants there; the surplus elsewhere is terminated later).
    The token budget ends a pass's launches at the first ``Throttled``: at 20,000 in the fleet simulation a new
    claim of a workload holding many instances waited behind re-plans' moves for 18-36 throttled passes (p99
    123 s). A workload's launches are classed in its own order (floor first) by their cumulative count: a launch
    is a deficit launch when any of its instances covers an uncovered one. A launch straddling the boundary is not
    split: it is one multi-create, one token either way, and two would need two calls and two launch keys for one
    slot; the moved part of it only goes out earlier. Without ``uncovered`` every launch is a deficit launch.

    **Claims first** among the deficit launches: those of a workload whose claimed units its live
    instances do not cover (``unclaimed``: a new claim, a noticed instance's units) go before deficit launches of
    workloads whose claims are covered and whose plans still want instances (the spread a plan completes). At
    20,000 in the fleet simulation a new claim of a workload holding many instances waited 13 throttled passes
    (69 s) behind such completions of workloads holding fewer, right after the build.

    Within each class, the **rounds**: a workload's next slot (its floor first) is in round ``held + k`` — what
    it already holds (``held``, live instances per workload) plus its slots before this one — so every workload
    that holds nothing gets its first instance before any other gets a second, this pass and the next. Within a
    round tier 1 goes first, then the order given. (In the diff's order, by workload name, the last workloads of
    a partition's first placement waited several passes for their first instance: 16 s in the demo.)"""
    held = held or {}
    rank: dict[str, int] = defaultdict(int)
    left: dict[tuple[str, bool], int] = defaultdict(int, uncovered or {})
    rounds: dict[int, int] = {}
    moves: set[int] = set()
    for n in sorted(range(len(launches)), key=lambda n: (launches[n].key.workload,
                                                         launches[n].key.purpose is not Purpose.FLOOR, n)):
        a = launches[n]
        rounds[n] = held.get(a.workload, 0) + rank[a.workload]
        rank[a.workload] += 1
        if uncovered is not None:
            cls = (a.workload, a.key.purpose is Purpose.FLOOR)
            if left[cls] <= 0:
                moves.add(n)
            left[cls] -= a.count
    def band(n: int) -> int:   # 0: an uncovered claim's, 1: the rest of the deficit, 2: a move
        return 2 if n in moves else 0 if launches[n].workload in unclaimed else 1

    return [launches[n] for n in sorted(range(len(launches)),
                                        key=lambda n: (band(n), rounds[n], tier_rank(launches[n].tier), n))]


def unclaimed_workloads(claims: Iterable[Claim], observed: Sequence[Observed], pools: Mapping[str, Pool], *,
                        partition: str) -> set[str]:
    """The workloads whose claimed units their live instances of ``partition`` do not cover (units an instance
    holds: ``units_per_instance`` of its pool; notified instances are leaving and do not count; an instance in a
    pool not in ``pools`` counts for nothing)."""
    contracts = {c.workload: c.contract for c in claims}
    covered: dict[str, int] = defaultdict(int)
    for o in observed:
        contract, pool = contracts.get(o.workload), pools.get(o.pool)
        if o.partition == partition and o.live and contract is not None and pool is not None:
            covered[o.workload] += units_per_instance(pool, contract)
    return {c.workload for c in claims if covered[c.workload] < c.units}


def uncovered_instances(desired: Mapping[SlotKey, int], observed: Sequence[Observed], *,
                        partition: str) -> dict[tuple[str, bool], int]:
    """Per (workload, floor or not): the instances ``desired`` wants less the live ones of ``partition`` (notified
    ones do not count: they are leaving), at least 0. Floor is counted apart: a reclaimable instance does not
    stand in for the floor (ADR-22), nor a floor instance for a reclaimable unit's slot."""
    out: dict[tuple[str, bool], int] = defaultdict(int)
    for key, n in desired.items():
        out[(key.workload, key.purpose is Purpose.FLOOR)] += n
    for o in observed:
        if o.partition == partition and o.live:
            out[(o.workload, o.purpose is Purpose.FLOOR)] -= 1
    return {k: v for k, v in out.items() if v > 0}
